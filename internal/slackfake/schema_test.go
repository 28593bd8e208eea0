package slackfake

import (
	"encoding/json"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// These tests check the fake's answers against Slack's own method reference
// (testdata/slack-api-ref, copied from github.com/slack-ruby/slack-api-ref, MIT):
//
//  1. every required output property is present, and every output property the
//     schema types directly has Slack's JSON type;
//  2. every key the fake shares with Slack's example responses has the example's
//     JSON type (arrays of objects are compared with the union of the example elements);
//  3. every field slackpoll reads is present with its JSON type, and that type agrees
//     with the fixtures wherever they show the field.

// shape is the union of JSON values seen at one place in Slack's examples.
type shape struct {
	types  map[string]bool
	fields map[string]*shape
	elem   *shape
}

func jsonType(v any) string {
	switch v.(type) {
	case map[string]any:
		return "object"
	case []any:
		return "array"
	case string:
		return "string"
	case float64:
		return "number"
	case bool:
		return "boolean"
	}
	return "null"
}

func (s *shape) add(v any) *shape {
	if s == nil {
		s = &shape{types: map[string]bool{}}
	}
	s.types[jsonType(v)] = true
	switch v := v.(type) {
	case map[string]any:
		if s.fields == nil {
			s.fields = map[string]*shape{}
		}
		for k, x := range v {
			s.fields[k] = s.fields[k].add(x)
		}
	case []any:
		for _, x := range v {
			s.elem = s.elem.add(x)
		}
	}
	return s
}

// compareShape reports keys of ours whose JSON type Slack's examples never use there.
func compareShape(path string, ours any, want *shape, errs *[]string) {
	if want == nil || want.types["null"] {
		return
	}
	typ := jsonType(ours)
	if !want.types[typ] {
		*errs = append(*errs, path+": "+typ+", Slack's examples have "+keys(want.types))
		return
	}
	switch o := ours.(type) {
	case map[string]any:
		for k, v := range o {
			compareShape(path+"."+k, v, want.fields[k], errs)
		}
	case []any:
		for _, v := range o {
			compareShape(path+"[]", v, want.elem, errs)
		}
	}
}

func keys(m map[string]bool) string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return strings.Join(out, "|")
}

type methodRef struct {
	Output struct {
		Required   []string                   `json:"required"`
		Properties map[string]json.RawMessage `json:"properties"`
	} `json:"output"`
	Examples map[string]struct {
		Example map[string]any `json:"example"`
	} `json:"examples"`
}

func loadRef(t *testing.T, method string) (methodRef, *shape) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "slack-api-ref", method+".json"))
	must(t, err)
	var ref methodRef
	must(t, json.Unmarshal(b, &ref))
	var ex *shape
	for _, e := range ref.Examples {
		if e.Example["ok"] == true || (e.Example["ok"] == nil && e.Example["messages"] != nil) {
			ex = ex.add(e.Example)
		}
	}
	return ref, ex
}

// schemaTypes returns the JSON types an output property allows: "type", or the types
// of oneOf/anyOf, or "string" for Slack's ID and ts schemas.
func schemaTypes(raw json.RawMessage) map[string]bool {
	var p struct {
		Type   string            `json:"type"`
		Schema string            `json:"schema"`
		OneOf  []json.RawMessage `json:"oneOf"`
		AnyOf  []json.RawMessage `json:"anyOf"`
	}
	if json.Unmarshal(raw, &p) != nil {
		return nil
	}
	out := map[string]bool{}
	switch {
	case p.Type == "integer":
		out["number"] = true
	case p.Type != "":
		out[p.Type] = true
	case strings.HasSuffix(p.Schema, "_id") || p.Schema == "ts" || p.Schema == "channel":
		out["string"] = true
	}
	for _, alt := range append(p.OneOf, p.AnyOf...) {
		for k := range schemaTypes(alt) {
			out[k] = true
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// read is a field slackpoll reads: a path and its JSON type. "messages[*].ts" is meant
// for every element (checked separately for type, ts and text), "messages[?].reply_count"
// for at least one; the lookup collects the values of all elements either way.
type read struct {
	path string
	typ  string
}

// lookup returns the values at path in v.
func lookup(v any, path string) []any {
	vals := []any{v}
	for _, tok := range strings.Split(path, ".") {
		name, mode, _ := strings.Cut(tok, "[")
		var next []any
		for _, x := range vals {
			o, ok := x.(map[string]any)
			if !ok {
				continue
			}
			y, ok := o[name]
			if !ok {
				continue
			}
			if mode == "" {
				next = append(next, y)
				continue
			}
			arr, _ := y.([]any)
			next = append(next, arr...)
		}
		vals = next
	}
	return vals
}

// shapeAt walks Slack's example shape along path.
func shapeAt(s *shape, path string) *shape {
	for _, tok := range strings.Split(path, ".") {
		name, mode, _ := strings.Cut(tok, "[")
		if s == nil || s.fields == nil {
			return nil
		}
		s = s.fields[name]
		if mode != "" && s != nil {
			s = s.elem
		}
	}
	return s
}

var msgReads = []read{
	{"ok", "boolean"}, {"has_more", "boolean"}, {"response_metadata.next_cursor", "string"},
	{"messages", "array"}, {"messages[*].type", "string"}, {"messages[*].ts", "string"},
	{"messages[*].text", "string"}, {"messages[?].user", "string"}, {"messages[?].thread_ts", "string"},
	{"messages[?].reply_count", "number"}, {"messages[?].latest_reply", "string"},
	{"messages[?].reply_users", "array"}, {"messages[?].reply_users_count", "number"},
	{"messages[?].edited.user", "string"}, {"messages[?].edited.ts", "string"},
	{"messages[?].reactions[*].name", "string"}, {"messages[?].reactions[*].count", "number"},
	{"messages[?].reactions[*].users", "array"}, {"messages[?].bot_id", "string"},
	{"messages[?].subtype", "string"}, {"messages[?].username", "string"},
	{"messages[?].bot_profile.name", "string"}, {"messages[?].hidden", "boolean"},
}

var chanReads = []read{
	{"id", "string"}, {"is_channel", "boolean"}, {"is_group", "boolean"}, {"is_im", "boolean"},
	{"is_mpim", "boolean"}, {"is_private", "boolean"}, {"is_archived", "boolean"},
}

func prefixed(prefix string, rs []read, extra ...read) []read {
	out := append([]read(nil), extra...)
	for _, r := range rs {
		out = append(out, read{prefix + r.path, r.typ})
	}
	return out
}

func TestResponsesMatchSlackSchemasAndExamples(t *testing.T) {
	s := truthScenario(t)
	must(t, s.AddUser(User{ID: "U5", DisplayName: "gone", RealName: "Gone User", Deleted: true}))
	var tomb string
	for _, m := range s.Truth().Messages {
		if m.Text == "doomed parent" {
			tomb = string(m.TS)
		}
	}
	// A thread with every shape of reply.
	parent := mustTS(t)(s.Post("C1", "U1", "rich thread"))
	r1 := mustTS(t)(s.Reply("C1", parent, "U2", "edited reply"))
	must(t, s.Edit("C1", r1, "edited reply (fixed)"))
	must(t, s.React("C1", r1, "U1", "eyes"))
	mustTS(t)(s.ReplyAsAppBot("C1", parent, "B1", "bot reply"))
	mustTS(t)(s.ReplyBroadcast("C1", parent, "U1", "broadcast"))
	var replyReads []read
	for _, r := range msgReads {
		if r.path != "messages[?].username" && r.path != "messages[?].hidden" {
			replyReads = append(replyReads, r)
		}
	}
	all := "public_channel,private_channel,im,mpim"
	cases := []struct {
		method string
		params url.Values
		reads  []read
	}{
		{"auth.test", nil, []read{{"ok", "boolean"}, {"url", "string"}, {"team", "string"}, {"user", "string"},
			{"team_id", "string"}, {"user_id", "string"}, {"bot_id", "string"}}},
		{"conversations.history", url.Values{"channel": {"C1"}, "limit": {"999"}}, msgReads},
		{"conversations.replies", url.Values{"channel": {"C1"}, "ts": {string(parent)}},
			append(replyReads, read{"messages[?].parent_user_id", "string"})},
		{"conversations.replies", url.Values{"channel": {"C1"}, "ts": {tomb}},
			[]read{{"messages[?].hidden", "boolean"}, {"messages[?].subtype", "string"}, {"messages[?].reply_count", "number"}}},
		{"conversations.info", url.Values{"channel": {"C1"}}, prefixed("channel.", chanReads,
			read{"channel.name", "string"}, read{"channel.is_member", "boolean"})},
		{"conversations.info", url.Values{"channel": {"D1"}}, prefixed("channel.", chanReads[:1],
			read{"channel.is_im", "boolean"}, read{"channel.user", "string"})},
		{"conversations.list", url.Values{"types": {all}, "limit": {"2"}}, prefixed("channels[?].", chanReads,
			read{"channels[?].name", "string"}, read{"channels[?].is_member", "boolean"},
			read{"response_metadata.next_cursor", "string"})},
		{"users.conversations", url.Values{"types": {all}}, prefixed("channels[?].", chanReads,
			read{"channels[?].name", "string"}, read{"response_metadata.next_cursor", "string"})},
		{"users.info", url.Values{"user": {"U1"}}, []read{{"user.id", "string"}, {"user.name", "string"},
			{"user.deleted", "boolean"}, {"user.real_name", "string"}, {"user.is_bot", "boolean"},
			{"user.profile.display_name", "string"}, {"user.profile.real_name", "string"}}},
		{"users.info", url.Values{"user": {"U5"}}, []read{{"user.id", "string"}, {"user.deleted", "boolean"},
			{"user.profile.display_name", "string"}, {"user.profile.real_name", "string"}}},
	}
	checkedAgainstFixtures := 0
	for _, tc := range cases {
		t.Run(tc.method+" "+tc.params.Encode(), func(t *testing.T) {
			ref, ex := loadRef(t, tc.method)
			r := rawCall(t, s, tc.method, tc.params)
			if r.json == nil || r.json["ok"] != true {
				t.Fatalf("answer: %s", r.body)
			}
			for _, req := range ref.Output.Required {
				if _, ok := r.json[req]; !ok {
					t.Errorf("required output property %q missing", req)
				}
			}
			for name, raw := range ref.Output.Properties {
				v, ok := r.json[name]
				if want := schemaTypes(raw); ok && want != nil && !want[jsonType(v)] {
					t.Errorf("output property %q is %s, the schema says %s", name, jsonType(v), keys(want))
				}
			}
			var errs []string
			compareShape(tc.method, any(r.json), ex, &errs)
			for _, e := range errs {
				t.Error("type differs from Slack's example: " + e)
			}
			for _, rd := range tc.reads {
				vals := lookup(r.json, rd.path)
				if len(vals) == 0 {
					t.Errorf("%s: absent", rd.path)
				}
				for _, v := range vals {
					if jsonType(v) != rd.typ {
						t.Errorf("%s: %s, want %s", rd.path, jsonType(v), rd.typ)
						break
					}
				}
				if fx := shapeAt(ex, rd.path); fx != nil {
					checkedAgainstFixtures++
					if !fx.types[rd.typ] && !fx.types["null"] {
						t.Errorf("%s: slackpoll expects %s but Slack's examples have %s", rd.path, rd.typ, keys(fx.types))
					}
				}
			}
			if tc.method == "conversations.history" || tc.method == "conversations.replies" {
				// Every message has type, ts and text.
				for _, p := range []string{"messages[*].type", "messages[*].ts", "messages[*].text"} {
					msgs := lookup(r.json, "messages[*]")
					vals := lookup(r.json, p)
					if len(vals) != len(msgs) {
						t.Errorf("%s present in %d of %d messages", p, len(vals), len(msgs))
					}
				}
			}
		})
	}
	if checkedAgainstFixtures < 40 {
		t.Errorf("only %d read fields could be checked against the fixtures", checkedAgainstFixtures)
	}
}
