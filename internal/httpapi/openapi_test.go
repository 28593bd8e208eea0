package httpapi

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"

	"github.com/slackpoll/slackpoll/internal/changefeed"
	"github.com/slackpoll/slackpoll/internal/metrics"
	rm "github.com/slackpoll/slackpoll/internal/readmodel"
	"github.com/slackpoll/slackpoll/internal/testsupport/readfixture"
	"github.com/slackpoll/slackpoll/internal/workspace"
)

// The document in docs/ is the one the API serves, byte for byte.
func TestDocsOpenAPIIsTheServedDocument(t *testing.T) {
	docs, err := os.ReadFile(filepath.Join("..", "..", "docs", "openapi.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(docs, openapiYAML) {
		t.Fatal("docs/openapi.yaml differs from internal/httpapi/openapi.yaml, which the API serves: cp internal/httpapi/openapi.yaml docs/openapi.yaml")
	}
}

// loadDoc loads the served document with kin-openapi and validates it as OpenAPI 3.1.
//
// kin-openapi v0.153.0 reads 3.1 documents whole, and openapi3filter validates their
// bodies with a JSON Schema 2020-12 validator (santhosh-tekuri/jsonschema), except a
// schema that has internal $refs and no 2020-only keyword (const, prefixItems, if,
// …): that one goes through its OpenAPI 3.0 validator, which also reads type arrays
// such as [string, "null"]. Both paths were checked to fail on a wrong type, a null
// where none is allowed and an undocumented field (strict).
func loadDoc(t *testing.T) *openapi3.T {
	t.Helper()
	doc, err := openapi3.NewLoader().LoadFromData(openapiJSON)
	if err != nil {
		t.Fatal(err)
	}
	if !doc.IsOpenAPI31OrLater() {
		t.Fatalf("openapi %q, want 3.1", doc.OpenAPI)
	}
	if err := doc.Validate(context.Background()); err != nil {
		t.Fatalf("the document is not valid OpenAPI: %v", err)
	}
	return doc
}

// op names one operation: "GET /v1/conversations/{id}/messages".
type op string

// routeList records what routes registers.
type routeList []string

func (r *routeList) HandleFunc(p string, _ func(http.ResponseWriter, *http.Request)) {
	*r = append(*r, p)
}
func (r *routeList) Handle(p string, _ http.Handler) { *r = append(*r, p) }

// Every route the API registers is documented, and every documented operation is a
// route.
func TestOpenAPIDocumentsEveryRoute(t *testing.T) {
	doc := loadDoc(t)
	var registered routeList
	(&api{metrics: metrics.New()}).routes(&registered)
	(&wsAPI{}).routes(&registered)
	code := map[op]bool{}
	for _, p := range registered {
		code[op(p)] = true
	}
	documented := map[op]bool{}
	for path, item := range doc.Paths.Map() {
		for method := range item.Operations() {
			documented[op(method+" "+path)] = true
		}
	}
	for o := range code {
		if !documented[o] {
			t.Errorf("route %s is not in the OpenAPI document", o)
		}
	}
	for o := range documented {
		if !code[o] {
			t.Errorf("the OpenAPI document has %s, which is no route", o)
		}
	}
}

// statusNames maps the net/http constants the package uses to their codes.
var statusNames = map[string]int{
	"StatusOK": 200, "StatusCreated": 201, "StatusNoContent": 204, "StatusUnprocessableEntity": 422, "StatusBadRequest": 400, "StatusUnauthorized": 401, "StatusForbidden": 403,
	"StatusNotFound": 404, "StatusMethodNotAllowed": 405, "StatusConflict": 409, "StatusGone": 410,
	"StatusUnsupportedMediaType": 415, "StatusInternalServerError": 500, "StatusNotImplemented": 501,
	"StatusServiceUnavailable": 503,
}

// sourceStatuses reads the package's source and returns, per function or method
// name, the HTTP status codes it can answer: the net/http Status constants in its
// body and in every function of the package and method of the api it calls,
// transitively.
type sourceStatuses struct {
	t     *testing.T
	decls map[string][]*ast.FuncDecl
	memo  map[string]map[int]bool
}

func newSourceStatuses(t *testing.T) *sourceStatuses {
	fset := token.NewFileSet()
	s := &sourceStatuses{t: t, decls: map[string][]*ast.FuncDecl{}, memo: map[string]map[int]bool{}}
	files, _ := filepath.Glob("*.go")
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		af, err := parser.ParseFile(fset, f, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range af.Decls {
			if fd, ok := d.(*ast.FuncDecl); ok {
				s.decls[fd.Name.Name] = append(s.decls[fd.Name.Name], fd)
			}
		}
	}
	return s
}

func (s *sourceStatuses) of(name string) map[int]bool {
	if got, ok := s.memo[name]; ok {
		return got
	}
	out := map[int]bool{}
	s.memo[name] = out // a recursive call sees what is known so far
	for _, fd := range s.decls[name] {
		if fd.Body == nil {
			continue
		}
		ast.Inspect(fd.Body, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.SelectorExpr:
				if x, ok := n.X.(*ast.Ident); ok && x.Name == "http" && strings.HasPrefix(n.Sel.Name, "Status") && n.Sel.Name != "StatusText" {
					code, ok := statusNames[n.Sel.Name]
					if !ok {
						s.t.Fatalf("%s uses http.%s: add it to statusNames", name, n.Sel.Name)
					}
					out[code] = true
				}
			case *ast.CallExpr:
				callee := ""
				switch f := n.Fun.(type) {
				case *ast.Ident:
					callee = f.Name
				case *ast.SelectorExpr:
					// The api's own methods (receiver a); a call through an interface
					// (w.WriteHeader) has no body of ours to follow.
					if x, ok := f.X.(*ast.Ident); ok && x.Name == "a" {
						callee = f.Sel.Name
					}
				}
				if _, ours := s.decls[callee]; ours && callee != name {
					for c := range s.of(callee) {
						out[c] = true
					}
				}
			}
			return true
		})
	}
	return out
}

// handlerNames reads routes' source: the handler of every registered pattern.
func (s *sourceStatuses) handlerNames() map[op]string {
	out := map[op]string{}
	for _, fd := range s.decls["routes"] {
		ast.Inspect(fd.Body, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok || len(call.Args) != 2 {
				return true
			}
			lit, ok := call.Args[0].(*ast.BasicLit)
			if !ok {
				return true
			}
			pattern, _ := strconv.Unquote(lit.Value)
			switch h := call.Args[1].(type) {
			case *ast.Ident:
				out[op(pattern)] = h.Name
			case *ast.SelectorExpr:
				out[op(pattern)] = h.Sel.Name
			case *ast.CallExpr: // a.metrics.Handler()
				if sel, ok := h.Fun.(*ast.SelectorExpr); ok {
					out[op(pattern)] = sel.Sel.Name
				}
			}
			return true
		})
	}
	return out
}

// codeStatuses is, per operation, every status the code can answer: its handler's,
// 200, and the middleware's that apply to it (401 but on the open /healthz, 403,
// 415 on a POST). The middleware's own sets are checked first, so that a new status
// there fails this test too.
func codeStatuses(t *testing.T) map[op][]int {
	s := newSourceStatuses(t)
	for fn, want := range map[string][]int{"requireToken": {401}, "checkHost": {403}, "crossOrigin": {403}, "requireJSON": {415}} {
		if got := sorted(s.of(fn)); !slices.Equal(got, want) {
			t.Fatalf("middleware %s answers %v, want %v: document the new status and teach codeStatuses where it applies", fn, got, want)
		}
	}
	out := map[op][]int{}
	for o, handler := range s.handlerNames() {
		codes := map[int]bool{403: true}
		for c := range s.of(handler) {
			codes[c] = true
		}
		if !codes[http.StatusNoContent] {
			codes[200] = true // writeJSON's default; a 204 handler answers no body
		}
		method, path, _ := strings.Cut(string(o), " ")
		if path != "/healthz" {
			codes[401] = true
		}
		if method == http.MethodPost {
			codes[415] = true
		}
		out[o] = sorted(codes)
	}
	return out
}

func sorted(set map[int]bool) []int {
	out := make([]int, 0, len(set))
	for c := range set {
		out = append(out, c)
	}
	sort.Ints(out)
	return out
}

// docStatuses is, per operation, the statuses the document lists.
func docStatuses(doc *openapi3.T) map[op][]int {
	out := map[op][]int{}
	for path, item := range doc.Paths.Map() {
		for method, o := range item.Operations() {
			set := map[int]bool{}
			for code := range o.Responses.Map() {
				n, _ := strconv.Atoi(code)
				set[n] = true
			}
			out[op(method+" "+path)] = sorted(set)
		}
	}
	return out
}

// Every status a handler or the middleware in front of it can answer is documented
// for that operation, and every documented status is one the code answers.
func TestOpenAPIDocumentsEveryStatusTheCodeAnswers(t *testing.T) {
	code, documented := codeStatuses(t), docStatuses(loadDoc(t))
	for o, want := range code {
		if got := documented[o]; !slices.Equal(got, want) {
			t.Errorf("%s: the document lists %v, the code answers %v", o, got, want)
		}
	}
}

// strict returns a copy of the document in which every object schema with properties
// allows no others: the served document leaves objects open (fields may be added
// within /v1), the test does not, so that a field the code sends and the document
// lacks fails it.
func strict(t *testing.T, doc *openapi3.T) *openapi3.T {
	t.Helper()
	seen := map[*openapi3.Schema]bool{}
	var close func(s *openapi3.SchemaRef)
	close = func(s *openapi3.SchemaRef) {
		if s == nil || s.Value == nil || seen[s.Value] {
			return
		}
		v := s.Value
		seen[v] = true
		if len(v.Properties) > 0 && v.AdditionalProperties.Has == nil && v.AdditionalProperties.Schema == nil {
			no := false
			v.AdditionalProperties = openapi3.AdditionalProperties{Has: &no}
		}
		for _, p := range v.Properties {
			close(p)
		}
		close(v.Items)
		close(v.AdditionalProperties.Schema)
		for _, list := range []openapi3.SchemaRefs{v.OneOf, v.AnyOf, v.AllOf} {
			for _, x := range list {
				close(x)
			}
		}
	}
	for _, s := range doc.Components.Schemas {
		close(s)
	}
	for _, item := range doc.Paths.Map() {
		for _, o := range item.Operations() {
			for _, r := range o.Responses.Map() {
				for _, mt := range r.Value.Content {
					close(mt.Schema)
				}
			}
		}
	}
	return doc
}

// failingStore fails every transaction: the store failures behind 500 and 503.
type failingStore struct{ rm.Store }

var errStoreDown = errors.New("the disk went away")

func (failingStore) View(func(rm.Tx) error) error    { return errStoreDown }
func (failingStore) Update(func(rm.Tx) error) error  { return errStoreDown }
func (failingStore) Backup(io.Writer) (int64, error) { return 0, errStoreDown }

// plainStore hides the bolt store's Backup: a store the API cannot copy (501).
type plainStore struct{ rm.Store }

const apiToken = "openapi-test-token"

// request is one request of TestOpenAPIAnswersMatchTheDocument.
type request struct {
	method, path string
	body         string // JSON, sent as application/json
	server       *httptest.Server
	want         int
	// contentType overrides application/json; host overrides the Host header;
	// noToken leaves Authorization out.
	contentType, host string
	noToken           bool
}

// A running API over a real bbolt store with data (a polled workspace, a change feed
// and an outbox) answers real requests; every answer, success or error, is validated
// against the document with kin-openapi, and every status the document lists for an
// operation is met by at least one request.
func TestOpenAPIAnswersMatchTheDocument(t *testing.T) {
	served := loadDoc(t)
	doc := strict(t, loadDoc(t))
	doc.Servers = openapi3.Servers{{URL: "http://api.test"}}
	router, err := gorillamux.NewRouter(doc)
	if err != nil {
		t.Fatal(err)
	}
	openapi3filter.RegisterBodyDecoder("application/x-ndjson", ndjsonDecoder)
	defer openapi3filter.UnregisterBodyDecoder("application/x-ndjson")

	f := readfixture.New(t, readfixture.Options{})
	now := time.Now()
	var seqs []uint64
	for i, observed := range []time.Time{now.Add(-30 * 24 * time.Hour), now, now} {
		c := rm.Change{Version: rm.ChangeVersion, ID: rm.NewEventID(), Kind: rm.ChangeReactionAdded, Channel: readfixture.General,
			TS: f.Parent, Reaction: "eyes", User: readfixture.Bee, Record: readfixture.Record, ObservedAt: observed}
		if i == 2 {
			text := "Deploy finished (v3)"
			c.Kind, c.Reaction, c.User = rm.ChangeMessageEdited, "", ""
			c.Before, c.After = &rm.ChangeValue{Text: &text}, &rm.ChangeValue{Text: &text, Edited: &rm.Edited{User: readfixture.Avery, TS: f.Parent}}
		}
		err := f.Store.Update(func(tx rm.Tx) error {
			if err := tx.AppendChange(&c); err != nil {
				return err
			}
			return tx.PutOutbox(rm.OutboxRow{Webhook: "app", Seq: c.Seq, Change: c, Enqueued: now, Parked: i == 1, Attempts: 10, LastError: "HTTP 500"})
		})
		if err != nil {
			t.Fatal(err)
		}
		seqs = append(seqs, c.Seq)
	}
	if n, err := changefeed.Prune(f.Store, now, 7*24*time.Hour, 100); n != 1 || err != nil {
		t.Fatalf("Prune = %d, %v", n, err)
	}
	proj := readfixture.Projection(t, f.Store)
	serveWith := func(store rm.Store, p Projections) *httptest.Server {
		srv := httptest.NewServer(New(Options{
			Store: store, Configured: f.Configured, Interval: readfixture.Interval, Token: apiToken,
			Now: f.Clock.Now, Webhooks: []string{"app"}, Projections: p,
		}))
		t.Cleanup(srv.Close)
		return srv
	}
	api := serveWith(f.Store, proj)
	down := serveWith(failingStore{f.Store}, proj)
	noBackup := serveWith(plainStore{f.Store}, proj)
	noProjection := serveWith(f.Store, nil)
	// A spool directory that is not there: the full disk behind the 503 of export
	// and backup.
	noSpool := httptest.NewServer(New(Options{Store: f.Store, Configured: f.Configured, Token: apiToken,
		Now: f.Clock.Now, SpoolDir: filepath.Join(t.TempDir(), "missing")}))
	t.Cleanup(noSpool.Close)

	// The install API, over a daemon of many workspaces whose one workspace is the
	// fixture's (its answers are the install API's; internal/cli's tests hold the
	// real supervisor to them).
	wsServe := func(fail bool) *httptest.Server {
		srv := httptest.NewServer(New(Options{Token: apiToken, Logger: nil,
			Workspaces: &fixtureWorkspaces{h: NewWorkspace(Options{Store: f.Store, Configured: f.Configured, Interval: readfixture.Interval, Now: f.Clock.Now}), store: f.Store, fail: fail}}))
		t.Cleanup(srv.Close)
		return srv
	}
	ws, wsDown := wsServe(false), wsServe(true)

	msg := "/v1/conversations/" + readfixture.General + "/messages/"
	trackBody := fmt.Sprintf(`{"channel":%q,"ts":%q}`, readfixture.General, f.Plain)
	// ok is a request answered 200 per operation: it also gives the 401, 403, 415
	// and 500 requests their path and body.
	ok := map[op]request{
		"GET /v1/conversations":                    {path: "/v1/conversations"},
		"GET /v1/conversations/{id}/messages":      {path: "/v1/conversations/" + readfixture.General + "/messages?limit=2"},
		"GET /v1/conversations/{id}/messages/{ts}": {path: msg + string(f.Parent)},
		"GET /v1/records/{key}":                    {path: "/v1/records/" + readfixture.Record},
		"GET /v1/users/{id}":                       {path: "/v1/users/" + readfixture.Avery},
		"POST /v1/tracked":                         {path: "/v1/tracked", body: trackBody},
		"DELETE /v1/tracked/{channel}/{ts}":        {path: "/v1/tracked/" + readfixture.General + "/" + string(readfixture.NeverPolled)},
		"GET /v1/status":                           {path: "/v1/status"},
		"GET /v1/changes":                          {path: fmt.Sprintf("/v1/changes?after=%d&limit=10", seqs[1]-1)},
		"GET /v1/outbox":                           {path: "/v1/outbox?webhook=app"},
		"POST /v1/outbox/requeue":                  {path: "/v1/outbox/requeue", body: `{"webhook":"app"}`},
		"POST /v1/outbox/drop":                     {path: "/v1/outbox/drop", body: `{"webhook":"gone"}`},
		"POST /v1/conversations/retry":             {path: "/v1/conversations/retry", body: `{"channels":[]}`},
		"GET /v1/export":                           {path: "/v1/export"},
		"GET /v1/backup":                           {path: "/v1/backup"},
		"GET /v1/openapi.json":                     {path: "/v1/openapi.json"},
		"GET /v1/search":                           {path: "/v1/search?q=deploy&limit=5"},
		"POST /v1/projection/rebuild":              {path: "/v1/projection/rebuild", body: `{}`},
		"GET /healthz":                             {path: "/healthz"},
		"GET /readyz":                              {path: "/readyz"},
		"GET /metrics":                             {path: "/metrics"},
		"GET /v1/workspaces":                       {path: "/v1/workspaces", server: ws},
		"GET /v1/workspaces/{team_id}":             {path: "/v1/workspaces/T0FIXTURE", server: ws},
		"GET /v1/workspaces/changes":               {path: "/v1/workspaces/changes?limit=10&cursor=" + allCursor(seqs[1]-1), server: ws},
		"PUT /v1/workspaces/{team_id}":             {path: "/v1/workspaces/T0FIXTURE", body: `{"bot_token":"xoxb-1","conversations":["C0GENERAL"]}`, server: ws},
		"DELETE /v1/workspaces/{team_id}":          {path: "/v1/workspaces/T0FIXTURE", server: ws, want: 204},
	}
	var reqs []request
	documented := docStatuses(served)
	for o, statuses := range documented {
		base, ok := ok[o]
		if !ok {
			t.Fatalf("no request for %s: add one to ok", o)
		}
		base.method, _, _ = strings.Cut(string(o), " ")
		if base.server == nil {
			base.server = api
		}
		if base.want == 0 {
			base.want = 200
		}
		reqs = append(reqs, base)
		for _, code := range statuses {
			r := base
			r.want = code
			switch code {
			case 401:
				r.noToken = true
			case 403:
				r.host = "evil.example"
			case 415:
				r.contentType = "text/plain"
			case 500:
				r.server = down
				if base.server == ws {
					r.server = wsDown
				}
			default:
				continue // the cases below
			}
			reqs = append(reqs, r)
		}
	}
	get := func(path string, want int) request {
		return request{method: http.MethodGet, path: path, server: api, want: want}
	}
	reqs = append(reqs,
		get("/v1/conversations/"+readfixture.General+"/messages?limit=0", 400),
		get("/v1/conversations/C0NOWHERE0/messages", 404),
		get(msg+"not-a-ts", 400),
		get(msg+"1.000001", 404),
		get("/v1/records/no-such-record", 404),
		get("/v1/users/U0NOBODY00", 404),
		request{method: http.MethodPost, path: "/v1/tracked", body: `{"channel":""}`, server: api, want: 400},
		request{method: http.MethodPost, path: "/v1/tracked", server: api, want: 409,
			body: fmt.Sprintf(`{"channel":%q,"ts":%q,"record":%q}`, readfixture.General, f.Plain, readfixture.Record)},
		request{method: http.MethodDelete, path: "/v1/tracked/" + readfixture.General + "/not-a-ts", server: api, want: 400},
		request{method: http.MethodDelete, path: "/v1/tracked/" + readfixture.General + "/1.000001", server: api, want: 404},
		get("/v1/changes?limit=0", 400),
		get("/v1/changes?after=999999", 409),
		get("/v1/changes?after=0", 410),
		request{method: http.MethodPost, path: "/v1/outbox/requeue", body: `{"webhook":""}`, server: api, want: 400},
		request{method: http.MethodPost, path: "/v1/outbox/requeue", body: `{"webhook":"gone"}`, server: api, want: 404},
		request{method: http.MethodPost, path: "/v1/outbox/drop", body: `{"webhook":""}`, server: api, want: 400},
		request{method: http.MethodPost, path: "/v1/outbox/drop", body: `{"webhook":"app"}`, server: api, want: 409},
		request{method: http.MethodPost, path: "/v1/conversations/retry", body: `{"channel":"C0GENERAL"}`, server: api, want: 400},
		request{method: http.MethodPost, path: "/v1/conversations/retry", body: fmt.Sprintf(`{"channels":[%q]}`, readfixture.General), server: api, want: 404},
		request{method: http.MethodGet, path: "/v1/backup", server: noBackup, want: 501},
		request{method: http.MethodGet, path: "/v1/backup", server: noSpool, want: 503},
		request{method: http.MethodGet, path: "/v1/export", server: noSpool, want: 503},
		request{method: http.MethodGet, path: "/readyz", server: down, want: 503},
		get("/v1/search?q=%21%21%21", 400),
		request{method: http.MethodGet, path: "/v1/search?q=deploy", server: noProjection, want: 503},
		request{method: http.MethodPost, path: "/v1/projection/rebuild", body: `{}`, server: noProjection, want: 503},
		request{method: http.MethodGet, path: "/v1/workspaces/T0NOWHERE", server: ws, want: 404},
		request{method: http.MethodGet, path: "/v1/workspaces/changes?cursor=not-a-cursor", server: ws, want: 400},
		request{method: http.MethodGet, path: "/v1/workspaces/changes?limit=0", server: ws, want: 400},
		request{method: http.MethodGet, path: "/v1/workspaces/changes", server: ws, want: 410},
		request{method: http.MethodPut, path: "/v1/workspaces/T0NEW", body: `{"bot_token":"xoxb-1","discover":"member"}`, server: ws, want: 201},
		request{method: http.MethodPut, path: "/v1/workspaces/t0lower", body: `{"bot_token":"xoxb-1"}`, server: ws, want: 400},
		request{method: http.MethodPut, path: "/v1/workspaces/T0NEW", body: `{"token":"xoxb-1"}`, server: ws, want: 400},
		request{method: http.MethodPut, path: "/v1/workspaces/T0CONFIG", body: `{"bot_token":"xoxb-1"}`, server: ws, want: 409},
		request{method: http.MethodPut, path: "/v1/workspaces/T0NOKEY", body: `{"bot_token":"xoxb-1"}`, server: ws, want: 403},
		request{method: http.MethodPut, path: "/v1/workspaces/T0INVALID", body: `{"bot_token":"xoxb-1"}`, server: ws, want: 422},
		request{method: http.MethodPut, path: "/v1/workspaces/T0DOWN", body: `{"bot_token":"xoxb-1"}`, server: ws, want: 503},
		request{method: http.MethodDelete, path: "/v1/workspaces/T0NOWHERE", server: ws, want: 404},
		request{method: http.MethodDelete, path: "/v1/workspaces/T0FIXTURE?purge=maybe", server: ws, want: 400},
		request{method: http.MethodDelete, path: "/v1/workspaces/T0CONFIG", server: ws, want: 409},
		request{method: http.MethodDelete, path: "/v1/workspaces/T0INVALID", server: ws, want: 422},
		request{method: http.MethodDelete, path: "/v1/workspaces/T0DOWN", server: ws, want: 503},
	)

	met := map[op]map[int]bool{}
	for _, r := range reqs {
		o, code := r.do(t, router)
		if met[o] == nil {
			met[o] = map[int]bool{}
		}
		met[o][code] = true
	}
	for o, statuses := range documented {
		for _, code := range statuses {
			if !met[o][code] {
				t.Errorf("%s: no request met the documented %d", o, code)
			}
		}
	}
}

// do sends r, checks its status and validates the request (when it is meant to be
// valid) and the answer against the document. It returns the operation and status.
func (r request) do(t *testing.T, router routers.Router) (op, int) {
	t.Helper()
	var body io.Reader
	if r.body != "" {
		body = strings.NewReader(r.body)
	}
	req, err := http.NewRequest(r.method, r.server.URL+r.path, body)
	if err != nil {
		t.Fatal(err)
	}
	if r.body != "" || r.contentType != "" {
		ct := r.contentType
		if ct == "" {
			ct = "application/json"
		}
		req.Header.Set("Content-Type", ct)
	}
	if !r.noToken {
		req.Header.Set("Authorization", "Bearer "+apiToken)
	}
	if r.host != "" {
		req.Host = r.host
	}
	resp, err := r.server.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	name := r.method + " " + r.path
	if resp.StatusCode != r.want {
		t.Errorf("%s: %d %.300s, want %d", name, resp.StatusCode, got, r.want)
	}

	// The document's route for the request, found at the document's server.
	match := req.Clone(context.Background())
	match.URL, _ = url.Parse("http://api.test" + r.path)
	if r.body != "" {
		match.Body = io.NopCloser(strings.NewReader(r.body))
	}
	route, params, err := router.FindRoute(match)
	if err != nil {
		t.Errorf("%s: not a documented operation: %v", name, err)
		return op(name), resp.StatusCode
	}
	o := op(r.method + " " + route.Path)
	in := &openapi3filter.RequestValidationInput{
		Request: match, PathParams: params, Route: route,
		Options: &openapi3filter.Options{AuthenticationFunc: openapi3filter.NoopAuthenticationFunc, MultiError: true},
	}
	if r.want/100 == 2 {
		if err := openapi3filter.ValidateRequest(context.Background(), in); err != nil {
			t.Errorf("%s: the request does not match the document: %v", name, err)
		}
	}
	out := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: in, Status: resp.StatusCode, Header: resp.Header,
		Body:    io.NopCloser(bytes.NewReader(got)),
		Options: &openapi3filter.Options{IncludeResponseStatus: true, MultiError: true},
	}
	if err := openapi3filter.ValidateResponse(context.Background(), out); err != nil {
		t.Errorf("%s: answer %d does not match the document: %v\n%.600s", name, resp.StatusCode, err, got)
	}
	return o, resp.StatusCode
}

// ndjsonDecoder decodes JSON Lines (the export) as a string after checking that each
// line is a JSON object.
func ndjsonDecoder(body io.Reader, _ http.Header, _ *openapi3.SchemaRef, _ openapi3filter.EncodingFn) (any, error) {
	b, err := io.ReadAll(body)
	if err != nil {
		return nil, err
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(nil, 1<<20)
	lines := 0
	for sc.Scan() {
		var v map[string]any
		if err := json.Unmarshal(sc.Bytes(), &v); err != nil {
			return nil, fmt.Errorf("line %d is not a JSON object: %w", lines+1, err)
		}
		lines++
	}
	if lines == 0 {
		return nil, errors.New("no line")
	}
	return string(b), sc.Err()
}

// The document's ChangeKind enum is the model's list of kinds: a kind added to
// readmodel.ChangeKinds without the document would reach clients undocumented, and
// the answer test above only ever writes a few kinds.
func TestOpenAPIChangeKindsAreTheModels(t *testing.T) {
	doc := loadDoc(t)
	ref, ok := doc.Components.Schemas["ChangeKind"]
	if !ok || ref.Value == nil {
		t.Fatal("the OpenAPI document has no ChangeKind schema")
	}
	var documented []string
	for _, v := range ref.Value.Enum {
		s, ok := v.(string)
		if !ok {
			t.Fatalf("ChangeKind enum holds %v (%T), want strings", v, v)
		}
		documented = append(documented, s)
	}
	model := rm.ChangeKinds()
	slices.Sort(documented)
	slices.Sort(model)
	if !slices.Equal(documented, model) {
		t.Errorf("ChangeKind enum of the OpenAPI document = %v,\nreadmodel.ChangeKinds() = %v", documented, model)
	}
}

// fixtureWorkspaces is a daemon of many workspaces as the API sees it, with one
// workspace, T0FIXTURE, over the fixture's store; the team_ids T0CONFIG, T0NOKEY,
// T0INVALID and T0DOWN get the install API's refusals, and fail makes every
// registration fail as a broken disk would.
type fixtureWorkspaces struct {
	h     http.Handler
	store rm.Store
	fail  bool
}

func (w *fixtureWorkspaces) status(team string) workspace.Status {
	return workspace.Status{TeamID: team, Source: workspace.SourceAPI, State: workspace.Active, Store: "/var/lib/slackpoll/" + team + ".db"}
}

func (w *fixtureWorkspaces) List() []workspace.Status {
	return []workspace.Status{w.status("T0FIXTURE")}
}

func (w *fixtureWorkspaces) Get(team string) (workspace.Status, bool) {
	return w.status(team), team == "T0FIXTURE"
}

func (w *fixtureWorkspaces) Handler(team string) (http.Handler, bool) {
	return w.h, team == "T0FIXTURE"
}

func (w *fixtureWorkspaces) Only() (http.Handler, bool) { return w.h, true }

func (w *fixtureWorkspaces) Feeds() []Feed {
	if w.fail {
		return []Feed{{TeamID: "T0FIXTURE", Store: failingStore{w.store}}}
	}
	return []Feed{{TeamID: "T0FIXTURE", Store: w.store}}
}

func (w *fixtureWorkspaces) refusal(team string) error {
	switch team {
	case "T0CONFIG":
		return &Refusal{Kind: RefuseConflict, Msg: "listed in the config file"}
	case "T0NOKEY":
		return &Refusal{Kind: RefuseNoKey, Msg: "no install key"}
	case "T0INVALID":
		return &Refusal{Kind: RefuseInvalid, Msg: "Slack rejected the token"}
	case "T0DOWN":
		return &Refusal{Kind: RefuseUnavailable, Msg: "Slack could not be asked"}
	}
	if w.fail {
		return errStoreDown
	}
	return nil
}

func (w *fixtureWorkspaces) Put(_ context.Context, team string, _ PutWorkspace) (workspace.Status, bool, error) {
	if err := w.refusal(team); err != nil {
		return workspace.Status{}, false, err
	}
	return w.status(team), team != "T0FIXTURE", nil
}

func (w *fixtureWorkspaces) Delete(_ context.Context, team string, _ bool) (bool, error) {
	if err := w.refusal(team); err != nil {
		return false, err
	}
	return team == "T0FIXTURE", nil
}

// allCursor is the cursor of GET /v1/workspaces/changes that goes on after seq in
// the fixture's workspace.
func allCursor(seq uint64) string {
	raw, _ := json.Marshal(map[string]uint64{"T0FIXTURE": seq})
	return base64.RawURLEncoding.EncodeToString(raw)
}
