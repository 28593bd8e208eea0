package slackfake

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
)

// FuzzRequest checks that no request input panics the Server and that every answer
// is JSON with an "ok" field.
func FuzzRequest(f *testing.F) {
	f.Add("conversations.history", "channel=C1&limit=2", "", "")
	f.Add("conversations.history", "", "channel=C1&oldest=1&latest=99999999999&inclusive=1&cursor=bmV4dF90czox", "application/x-www-form-urlencoded")
	f.Add("conversations.replies", "channel=C1&ts=1796032800.000000&limit=-5", "", "")
	f.Add("conversations.replies", "", `{"channel":"C1","ts":1796032800.000001,"limit":true}`, "application/json")
	f.Add("conversations.list", "types=im,,bogus&cursor=dGVhbTo=", "", "")
	f.Add("users.conversations", "limit=99999999999999999999", "", "")
	f.Add("users.info", "user=%ZZ", "user=U1", "application/x-www-form-urlencoded")
	f.Add("conversations.info", "channel=D1", "", "")
	f.Add("auth.test", "token=", "", "")
	f.Add("../../x", "", "\x00\xff", "multipart/form-data; boundary=x")
	f.Fuzz(func(t *testing.T, method, query, body, contentType string) {
		s, _ := newFake(t, Options{PageCap: 3, ReactionUsersCap: 1})
		workspace(t, s)
		parent := mustTS(t)(s.Post("C1", "U1", "x"))
		mustTS(t)(s.Reply("C1", parent, "U2", "y"))
		must(t, s.React("C1", parent, "U2", "eyes"))
		req, err := http.NewRequest(http.MethodPost, apiURL, strings.NewReader(body))
		if err != nil {
			t.Skip()
		}
		req.URL.Path = "/api/" + method
		req.URL.RawQuery = query + "&token=" + s.Token()
		req.Header.Set("Content-Type", contentType)
		resp, err := s.Client().Do(req)
		if err != nil {
			t.Fatalf("no answer: %v", err)
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		var v map[string]any
		if err := json.Unmarshal(b, &v); err != nil {
			t.Fatalf("answer is not JSON: %v\n%s", err, b)
		}
		if _, ok := v["ok"].(bool); !ok {
			t.Fatalf("answer without ok: %s", b)
		}
	})
}
