package httpapi_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/slackpoll/slackpoll/internal/export"
	"github.com/slackpoll/slackpoll/internal/httpapi"
	rm "github.com/slackpoll/slackpoll/internal/readmodel"
	"github.com/slackpoll/slackpoll/internal/testsupport/readfixture"
)

func TestTrackAddsANeverPolledMessageWithItsRecord(t *testing.T) {
	e := newEnv(t, envOpts{})
	const ts = "1790000000.000200"
	code, b := e.do(t, http.MethodPost, "/v1/tracked", httpapi.TrackRequest{Channel: readfixture.General, TS: ts, Record: "ticket-7"})
	if code != http.StatusOK {
		t.Fatalf("POST /v1/tracked = %d %s", code, b)
	}
	var m export.MessageLine
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	if m.TS != ts || m.Record != "ticket-7" || m.LastPolledAt != nil {
		t.Errorf("tracked line = %+v, want ts %s, record ticket-7, last_polled_at null", m, ts)
	}
	var byRecord export.MessageLine
	e.get(t, "/v1/records/ticket-7", http.StatusOK, &byRecord)
	if byRecord.TS != ts {
		t.Errorf("record ticket-7 → %s, want %s", byRecord.TS, ts)
	}
	// Never polled: first in the tail rotation, so the next tick reads it first.
	err := e.f.Store.View(func(tx rm.Tx) error {
		head, err := tx.TailOldest(2, nil)
		if err != nil {
			return err
		}
		for _, h := range head {
			if h.TS == ts && h.RotatedAt == nil {
				return nil
			}
		}
		t.Errorf("tail head = %+v, want %s never polled among the first", head, ts)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// Again with the same record, or none: a no-op.
	for _, rec := range []string{"ticket-7", ""} {
		if code, b := e.do(t, http.MethodPost, "/v1/tracked", httpapi.TrackRequest{Channel: readfixture.General, TS: ts, Record: rec}); code != http.StatusOK {
			t.Errorf("tracking again with record %q = %d %s, want 200", rec, code, b)
		}
	}
}

func TestTrackConflictsAndBadBodies(t *testing.T) {
	e := newEnv(t, envOpts{})
	// Parent already carries ticket-42.
	wantErr(t, e, http.MethodPost, "/v1/tracked", httpapi.TrackRequest{Channel: readfixture.General, TS: string(e.f.Parent), Record: "ticket-9"},
		http.StatusConflict, "ticket-42")
	// ticket-42 is already attached to Parent.
	wantErr(t, e, http.MethodPost, "/v1/tracked", httpapi.TrackRequest{Channel: readfixture.General, TS: string(e.f.Plain), Record: readfixture.Record},
		http.StatusConflict, "already attached")
	wantErr(t, e, http.MethodPost, "/v1/tracked", httpapi.TrackRequest{Channel: readfixture.General, TS: "soon"}, http.StatusBadRequest, "soon")
	wantErr(t, e, http.MethodPost, "/v1/tracked", httpapi.TrackRequest{TS: string(e.f.Plain)}, http.StatusBadRequest, "channel")
	wantErr(t, e, http.MethodPost, "/v1/tracked", map[string]string{"channel": readfixture.General, "ts": string(e.f.Plain), "recrod": "x"},
		http.StatusBadRequest, "recrod")
	// Nothing of the rejected requests was written.
	var plain export.MessageLine
	e.get(t, "/v1/conversations/"+readfixture.General+"/messages/"+string(e.f.Plain), http.StatusOK, &plain)
	if plain.Record != "" {
		t.Errorf("Plain got record %q from a rejected request", plain.Record)
	}
}

func TestTrackBodyIsBounded(t *testing.T) {
	e := newEnv(t, envOpts{})
	huge := map[string]string{"channel": readfixture.General, "ts": string(e.f.Plain), "record": strings.Repeat("x", 100<<10)}
	wantErr(t, e, http.MethodPost, "/v1/tracked", huge, http.StatusBadRequest, "body")
}

// A message tracked where slackpoll does not poll would stay "never read" forever.
func TestTrackRefusesConversationsNotPolled(t *testing.T) {
	e := newEnv(t, envOpts{})
	for _, ch := range []string{"C0NOPE0000", "general"} {
		code, b := e.do(t, http.MethodPost, "/v1/tracked", httpapi.TrackRequest{Channel: ch, TS: "1790000000.000200"})
		if code != http.StatusBadRequest || !strings.Contains(string(b), ch) {
			t.Errorf("POST /v1/tracked %s = %d %s, want 400 naming it", ch, code, b)
		}
	}
}

// DELETE /v1/tracked/{channel}/{ts} untracks: the record key is free again, the
// never-read placeholder is gone; a message not tracked is 404.
func TestDeleteTrackedUntracks(t *testing.T) {
	e := newEnv(t, envOpts{})
	const ts = "1790000000.000200"
	if code, b := e.do(t, http.MethodPost, "/v1/tracked", httpapi.TrackRequest{Channel: readfixture.General, TS: ts, Record: "ticket-7"}); code != http.StatusOK {
		t.Fatalf("POST /v1/tracked = %d %s", code, b)
	}
	path := "/v1/tracked/" + readfixture.General + "/" + ts
	if code, b := e.do(t, http.MethodDelete, path, nil); code != http.StatusOK {
		t.Fatalf("DELETE %s = %d %s", path, code, b)
	}
	wantErr(t, e, http.MethodGet, "/v1/records/ticket-7", nil, http.StatusNotFound, "ticket-7")
	wantErr(t, e, http.MethodGet, "/v1/conversations/"+readfixture.General+"/messages/"+ts, nil, http.StatusNotFound, ts)
	wantErr(t, e, http.MethodDelete, path, nil, http.StatusNotFound, "not tracked")
	wantErr(t, e, http.MethodDelete, "/v1/tracked/"+readfixture.General+"/soon", nil, http.StatusBadRequest, "soon")
}
