package compliance

import (
	"bufio"
	"bytes"
	"io"
	"net"
	"net/http"
	"net/url"
	"path"
	"strconv"
	"sync"
	"time"
)

// Recorder is an http.Handler that logs every request it passes to the wrapped
// handler (the fake Slack) as a Call, with the status and Retry-After of the answer:
// what the client was actually told, which the fake's own log does not keep.
type Recorder struct {
	next http.Handler
	// Before, if set, is called with each request's method and parameters just
	// before the request is passed on — a test can inject a fault into the fake that
	// then applies to this very request (e.g. slow down a thread's second page). It
	// runs on the request's goroutine and must be goroutine-safe.
	Before func(method string, params url.Values)

	mu    sync.Mutex
	calls []Call
}

var _ http.Handler = (*Recorder)(nil)

// NewRecorder wraps next.
func NewRecorder(next http.Handler) *Recorder { return &Recorder{next: next} }

// Calls returns a copy of the log, in arrival order.
func (r *Recorder) Calls() []Call {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Call(nil), r.calls...)
}

// ServeHTTP logs the request on arrival (so the log is in arrival order even for
// answers that take long), then fills in the answer once the wrapped handler returns.
func (r *Recorder) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	method := path.Base(req.URL.Path)
	params := requestParams(req)
	r.mu.Lock()
	i := len(r.calls)
	r.calls = append(r.calls, Call{Method: method, Time: time.Now(), Cursor: params.Get("cursor")})
	r.mu.Unlock()
	if r.Before != nil {
		r.Before(method, params)
	}
	sw := &statusWriter{ResponseWriter: w}
	defer func() {
		r.mu.Lock()
		c := &r.calls[i]
		c.Status = sw.status
		if ra, err := strconv.Atoi(w.Header().Get("Retry-After")); err == nil && c.RateLimited() {
			c.RetryAfter, c.HasRetryAfter = time.Duration(ra)*time.Second, true
		}
		r.mu.Unlock()
	}()
	r.next.ServeHTTP(sw, req)
}

// requestParams reads the query and a form body, and puts the body back for the
// wrapped handler. slack-go posts its arguments form-encoded.
func requestParams(req *http.Request) url.Values {
	params := req.URL.Query()
	if req.Body == nil {
		return params
	}
	body, _ := io.ReadAll(req.Body)
	_ = req.Body.Close() // replaced just below
	req.Body = io.NopCloser(bytes.NewReader(body))
	if form, err := url.ParseQuery(string(body)); err == nil {
		for k, v := range form {
			params[k] = append(params[k], v...)
		}
	}
	return params
}

// statusWriter remembers the status written. It passes Hijack through, which the
// fake uses to reset connections; a hijacked request keeps status 0.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

func (w *statusWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	return http.NewResponseController(w.ResponseWriter).Hijack()
}

func (w *statusWriter) Flush() { _ = http.NewResponseController(w.ResponseWriter).Flush() }
