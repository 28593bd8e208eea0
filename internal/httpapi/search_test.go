package httpapi_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/slackpoll/slackpoll/internal/httpapi"
	"github.com/slackpoll/slackpoll/internal/metrics"
	"github.com/slackpoll/slackpoll/internal/projection"
	"github.com/slackpoll/slackpoll/internal/testsupport/readfixture"
)

// projectedEnv is an API server over the fixture store with a SQLite projection
// kept by a running projection.Runner, as the daemon wires them.
func projectedEnv(t *testing.T) (*env, *projection.Runner) {
	t.Helper()
	m := metrics.New()
	f := readfixture.New(t, readfixture.Options{OnCall: m.OnCall, OnTick: m.OnTick})
	r := readfixture.Projection(t, f.Store)
	m.SetProjections(r.Statuses)
	h := httpapi.New(httpapi.Options{
		Store: f.Store, Configured: f.Configured, Interval: readfixture.Interval, Ready: m.Ready, Metrics: m,
		Now: f.Clock.Now, Projections: r,
	})
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return &env{f: f, metrics: m, srv: srv}, r
}

func TestSearchFindsMessagesWithTheirFreshness(t *testing.T) {
	e, _ := projectedEnv(t)
	code, body := e.do(t, http.MethodGet, "/v1/search?q=deploy&channel="+readfixture.General, nil)
	if code != http.StatusOK {
		t.Fatalf("GET /v1/search: %d %s", code, body)
	}
	var page struct {
		Items      []map[string]any `json:"items"`
		NextCursor *string          `json:"next_cursor"`
	}
	if err := json.Unmarshal(body, &page); err != nil {
		t.Fatal(err)
	}
	if len(page.Items) != 1 || page.NextCursor == nil || *page.NextCursor != "" {
		t.Fatalf("page = %s, want one hit and an empty next_cursor", body)
	}
	h := page.Items[0]
	if h["ts"] != string(e.f.Parent) || h["snippet"] != "«Deploy» finished (v2)" || h["user_label"] != "avery" {
		t.Errorf("hit = %s", body)
	}
	// The parent carries a record key: it is watched, and says how stale it may be.
	if h["last_polled_at"] == nil || h["class"] != projection.ClassWatched {
		t.Errorf("hit freshness: last_polled_at %v class %v, want a time and watched", h["last_polled_at"], h["class"])
	}
	if _, ok := h["staleness_seconds"]; !ok {
		t.Error("hit without staleness_seconds")
	}
	code, body = e.do(t, http.MethodGet, "/v1/search?q=deploy&record="+readfixture.Record, nil)
	if code != http.StatusOK || !strings.Contains(string(body), string(e.f.Parent)) {
		t.Errorf("search by record: %d %s", code, body)
	}
}

// channel keeps several conversations, repeated or comma-separated (the MCP server
// asks for the exposed ones this way): a hit of any of them is found, and none of
// a conversation left out.
func TestSearchKeepsSeveralChannels(t *testing.T) {
	e, _ := projectedEnv(t)
	for q, want := range map[string]int{
		"channel=" + readfixture.Outside:                                     0,
		"channel=" + readfixture.Outside + "&channel=" + readfixture.Secret:  0,
		"channel=" + readfixture.Outside + "&channel=" + readfixture.General: 1,
		"channel=" + readfixture.Outside + "," + readfixture.General:         1,
		"channel=" + readfixture.General + ",%20" + readfixture.Outside:      1,
	} {
		code, body := e.do(t, http.MethodGet, "/v1/search?q=deploy&"+q, nil)
		var page struct {
			Items []struct {
				Channel string `json:"channel"`
			} `json:"items"`
		}
		if code != http.StatusOK || json.Unmarshal(body, &page) != nil {
			t.Fatalf("GET /v1/search?q=deploy&%s: %d %s", q, code, body)
		}
		if len(page.Items) != want || (want == 1 && page.Items[0].Channel != readfixture.General) {
			t.Errorf("GET /v1/search?q=deploy&%s: %s, want %d hit(s) of %s", q, body, want, readfixture.General)
		}
	}
}

func TestSearchRefusesBadParameters(t *testing.T) {
	e, _ := projectedEnv(t)
	for _, q := range []string{"", "q=", "q=%21%21", "q=deploy&limit=0", "q=deploy&limit=101", "q=deploy&limit=x",
		"q=deploy&after=yesterday", "q=deploy&before=1.2.3", "q=deploy&cursor=zzz", "q=" + strings.Repeat("a", 600)} {
		code, body := e.do(t, http.MethodGet, "/v1/search?"+q, nil)
		if code != http.StatusBadRequest || !strings.Contains(string(body), `"error"`) {
			t.Errorf("GET /v1/search?%.40s: %d %s, want 400 with an error", q, code, body)
		}
	}
}

func TestSearchWithoutAProjectionIsUnavailable(t *testing.T) {
	e := newEnv(t, envOpts{})
	for _, c := range []struct{ method, path string }{{http.MethodGet, "/v1/search?q=deploy"}, {http.MethodPost, "/v1/projection/rebuild"}} {
		var body any
		if c.method == http.MethodPost {
			body = struct{}{}
		}
		if code, b := e.do(t, c.method, c.path, body); code != http.StatusServiceUnavailable {
			t.Errorf("%s %s without a projection: %d %s, want 503", c.method, c.path, code, b)
		}
	}
}

// The projection's state is in the status report and the metrics; a rebuild asked
// through the API rebuilds it.
func TestProjectionStatusMetricsAndRebuild(t *testing.T) {
	e, r := projectedEnv(t)
	code, body := e.do(t, http.MethodGet, "/v1/status", nil)
	if code != http.StatusOK {
		t.Fatalf("status: %d %s", code, body)
	}
	var st struct {
		Projections []projection.Status `json:"projections"`
	}
	if err := json.Unmarshal(body, &st); err != nil {
		t.Fatal(err)
	}
	if len(st.Projections) != 1 || st.Projections[0].Target != projection.KindSQLite || st.Projections[0].State != projection.StateCurrent ||
		st.Projections[0].LagSeq != 0 || st.Projections[0].CursorSeq != st.Projections[0].LastSeq {
		t.Errorf("status projections = %+v", st.Projections)
	}
	_, metrics := e.do(t, http.MethodGet, "/metrics", nil)
	for _, want := range []string{`slackpoll_projection_lag_seq{target="sqlite"} 0`, `slackpoll_projection_lag_seconds{target="sqlite"} 0`,
		`slackpoll_projection_up{target="sqlite"} 1`, `slackpoll_projection_batches_total{kind="sync",target="sqlite"} 1`} {
		if !strings.Contains(string(metrics), want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	code, body = e.do(t, http.MethodPost, "/v1/projection/rebuild", struct{}{})
	if code != http.StatusOK || !strings.Contains(string(body), `"rebuilding":1`) {
		t.Fatalf("rebuild: %d %s", code, body)
	}
	deadline := time.Now().Add(30 * time.Second)
	for r.Statuses()[0].Syncs < 2 || r.Statuses()[0].State != projection.StateCurrent {
		if time.Now().After(deadline) {
			t.Fatalf("no second sync after the rebuild request: %+v", r.Statuses()[0])
		}
		time.Sleep(10 * time.Millisecond)
	}
}
