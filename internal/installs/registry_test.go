package installs

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

const (
	secretBot     = "xoxe.xoxb-1-BOTSECRETVALUE"
	secretRefresh = "xoxe-1-REFRESHSECRETVALUE"
)

func openTestRegistry(t *testing.T, path string, k *Key) *Registry {
	t.Helper()
	reg, err := OpenRegistry(path, k)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = reg.Close() })
	return reg
}

func sampleInstallation(team string) Installation {
	return Installation{
		TeamID: team, EnterpriseID: "E0ORG", BotToken: secretBot, RefreshToken: secretRefresh,
		ExpiresAt:     time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC),
		Conversations: []string{"C1", "C2"}, Discover: "member",
		AddedAt: time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC),
		Refresh: &PendingRefresh{StartedAt: time.Date(2026, 12, 2, 6, 0, 0, 0, time.UTC), Of: secretRefresh},
	}
}

func TestRegistryRoundTrip(t *testing.T) {
	k, _ := newTestKey(t)
	path := filepath.Join(t.TempDir(), "installations.db")
	reg := openTestRegistry(t, path, k)
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o600 {
		t.Errorf("registry file mode %v, want 0600", st.Mode().Perm())
	}
	in := sampleInstallation("T2")
	if err := reg.Put(in); err != nil {
		t.Fatal(err)
	}
	if err := reg.Put(Installation{TeamID: "T1", BotToken: "xoxb-2"}); err != nil {
		t.Fatal(err)
	}
	got, found, err := reg.Get("T2")
	if err != nil || !found || !reflect.DeepEqual(got, in) {
		t.Fatalf("Get = %+v, %v, %v; want %+v", got, found, err, in)
	}
	if _, found, err := reg.Get("T9"); found || err != nil {
		t.Errorf("Get of a missing team = %v, %v", found, err)
	}
	list, err := reg.List()
	if err != nil || len(list) != 2 || list[0].TeamID != "T1" || list[1].TeamID != "T2" {
		t.Fatalf("List = %v, %v; want T1, T2", list, err)
	}
	if err := reg.Delete("T1"); err != nil {
		t.Fatal(err)
	}
	if _, found, _ := reg.Get("T1"); found {
		t.Error("T1 still there after Delete")
	}
	for _, bad := range []Installation{{TeamID: "", BotToken: "x"}, {TeamID: "t1", BotToken: "x"}, {TeamID: "T3"}} {
		if err := reg.Put(bad); err == nil {
			t.Errorf("Put(%+v) accepted", bad)
		}
	}
	if err := reg.Close(); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{secretBot, secretRefresh, "C1", "member"} {
		if bytes.Contains(raw, []byte(s)) {
			t.Errorf("the registry file holds %q in the clear", s)
		}
	}
}

func TestRegistryLocked(t *testing.T) {
	k, _ := newTestKey(t)
	path := filepath.Join(t.TempDir(), "installations.db")
	openTestRegistry(t, path, k)
	_, err := OpenRegistry(path, k)
	if err == nil || !strings.Contains(err.Error(), "another slackpoll holds it") {
		t.Fatalf("second open: %v, want an error saying another slackpoll holds it", err)
	}
	if _, err := OpenRegistry(path+"2", nil); !errors.Is(err, ErrNoKey) {
		t.Errorf("no key: %v, want ErrNoKey", err)
	}
}

// TestRegistryDamaged: one record with a flipped byte, one moved under another team's
// name and a whole registry under a wrong key are errors naming the teams, and never
// hide the good records.
func TestRegistryDamaged(t *testing.T) {
	k, _ := newTestKey(t)
	path := filepath.Join(t.TempDir(), "installations.db")
	reg := openTestRegistry(t, path, k)
	for _, team := range []string{"T1", "T2", "T3", "T4"} {
		if err := reg.Put(Installation{TeamID: team, BotToken: Secret("xoxb-" + team)}); err != nil {
			t.Fatal(err)
		}
	}
	err := reg.db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketName)
		v := bytes.Clone(b.Get([]byte("T2")))
		v[len(v)/2] ^= 0x80
		if err := b.Put([]byte("T2"), v); err != nil {
			return err
		}
		// T1's sealed record put under T4: the additional data refuses it.
		return b.Put([]byte("T4"), bytes.Clone(b.Get([]byte("T1"))))
	})
	if err != nil {
		t.Fatal(err)
	}
	list, err := reg.List()
	var de *DamagedError
	if !errors.As(err, &de) || !reflect.DeepEqual(de.TeamIDs, []string{"T2", "T4"}) {
		t.Fatalf("List error %v, want a DamagedError naming T2 and T4", err)
	}
	if !strings.Contains(err.Error(), "T2, T4") {
		t.Errorf("error %q does not name the teams", err)
	}
	if len(list) != 2 || list[0].TeamID != "T1" || list[1].TeamID != "T3" {
		t.Errorf("List returned %v with the error, want T1 and T3", list)
	}
	if _, _, err := reg.Get("T2"); !errors.As(err, &de) || !strings.Contains(err.Error(), "T2") {
		t.Errorf("Get(T2) = %v, want a DamagedError naming T2", err)
	}
	if err := reg.Update("T2", func(*Installation, bool) error { t.Error("fn called on a damaged record"); return nil }); !errors.As(err, &de) {
		t.Errorf("Update(T2) = %v, want a DamagedError", err)
	}
	// Registering the team again replaces the damaged record.
	if err := reg.Put(Installation{TeamID: "T2", BotToken: "xoxb-new"}); err != nil {
		t.Errorf("Put over a damaged record: %v", err)
	}
	if in, found, err := reg.Get("T2"); err != nil || !found || in.BotToken != "xoxb-new" {
		t.Errorf("Get(T2) after Put = %v, %v, %v", in, found, err)
	}
	_ = reg.Close()

	wrong, _ := newTestKey(t)
	reg2 := openTestRegistry(t, path, wrong)
	list, err = reg2.List()
	if !errors.As(err, &de) || len(de.TeamIDs) != 4 || len(list) != 0 {
		t.Errorf("wrong key: List = %v, %v; want no record and all four named", list, err)
	}
}

// TestInstallationNeverShowsTokens prints, logs and marshals an Installation in every
// way a caller might and looks for the tokens.
func TestInstallationNeverShowsTokens(t *testing.T) {
	in := sampleInstallation("T1")
	var outs []string
	for _, f := range []string{"%v", "%+v", "%#v", "%s", "%q", "%x", "%d"} {
		outs = append(outs, fmt.Sprintf(f, in), fmt.Sprintf(f, &in), fmt.Sprintf(f, in.BotToken), fmt.Sprintf(f, *in.Refresh))
	}
	outs = append(outs, fmt.Sprint(in), fmt.Sprintln([]Installation{in}), fmt.Sprintf("%+v", map[string]Installation{"a": in}))
	var text, js bytes.Buffer
	slog.New(slog.NewTextHandler(&text, nil)).Info("x", "installation", in, "token", in.BotToken, "ptr", &in, "pending", in.Refresh)
	slog.New(slog.NewJSONHandler(&js, nil)).Info("x", "installation", in, "token", in.BotToken, "any", any(in))
	outs = append(outs, text.String(), js.String())
	b, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	outs = append(outs, string(b))
	for _, out := range outs {
		for _, s := range []string{secretBot, secretRefresh, "BOTSECRET", "REFRESHSECRET"} {
			if strings.Contains(out, s) {
				t.Errorf("output shows a token: %s", out)
			}
			if strings.Contains(out, fmt.Sprintf("%x", s)[:12]) {
				t.Errorf("output shows a token in hex: %s", out)
			}
		}
	}
	if !strings.Contains(text.String(), "team_id=T1") || !strings.Contains(js.String(), `"team_id":"T1"`) {
		t.Errorf("the log lines lost the team: %s %s", text.String(), js.String())
	}
	if !strings.Contains(string(b), `"BotToken":"[redacted]"`) {
		t.Errorf("json = %s, want the token as [redacted]", b)
	}
	if string(in.BotToken) != secretBot {
		t.Error("string(Secret) does not give the token back")
	}
}
