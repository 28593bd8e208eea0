package slackfake

import (
	"bytes"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"syscall"

	"github.com/slackpoll/slackpoll/internal/ctxsleep"
)

// Transport returns an http.RoundTripper that answers requests in memory, with no
// sockets, so it works inside testing/synctest bubbles. It honours the request
// context (a cancelled context fails the call, also during a Slow fault), sets real
// Content-Length and Retry-After headers, reports ConnReset as an ECONNRESET error and
// TruncatedBody as a body that ends early with io.ErrUnexpectedEOF.
func (s *Server) Transport() http.RoundTripper { return transport{s} }

// handler answers a request read in full: a Server or Teams.
type handler interface {
	handle(u *url.URL, header http.Header, body []byte, bodyErr error) *answer
}

type transport struct{ h handler }

func (t transport) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx := req.Context()
	var body []byte
	var bodyErr error
	if req.Body != nil {
		body, bodyErr = io.ReadAll(io.LimitReader(req.Body, maxBody))
		_ = req.Body.Close() // fully read; nothing to report

	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	a := t.h.handle(req.URL, req.Header, body, bodyErr)
	if err := ctxsleep.Sleep(ctx, a.delay); err != nil {
		return nil, err
	}
	if a.reset {
		return nil, &net.OpError{Op: "read", Net: "tcp", Err: os.NewSyscallError("read", syscall.ECONNRESET)}
	}
	h := a.header.Clone()
	size := a.body.size()
	h.Set("Content-Length", strconv.Itoa(size))
	var rd io.Reader = &segReader{segs: a.body}
	if a.trunc {
		rd = io.MultiReader(bytes.NewReader(a.body.flat()[:size/2]), errReader{io.ErrUnexpectedEOF})
	}
	return &http.Response{
		Status:        strconv.Itoa(a.status) + " " + http.StatusText(a.status),
		StatusCode:    a.status,
		Proto:         "HTTP/1.1",
		ProtoMajor:    1,
		ProtoMinor:    1,
		Header:        h,
		Body:          io.NopCloser(rd),
		ContentLength: int64(size),
		Request:       req,
	}, nil
}

// segReader reads segments without copying them first.
type segReader struct{ segs segments }

func (r *segReader) Read(p []byte) (int, error) {
	n := 0
	for n < len(p) && len(r.segs) > 0 {
		c := copy(p[n:], r.segs[0])
		n += c
		if r.segs[0] = r.segs[0][c:]; len(r.segs[0]) == 0 {
			r.segs = r.segs[1:]
		}
	}
	if n == 0 && len(p) > 0 {
		return 0, io.EOF
	}
	return n, nil
}

func (r *segReader) WriteTo(w io.Writer) (int64, error) {
	var total int64
	for len(r.segs) > 0 {
		n, err := w.Write(r.segs[0])
		total += int64(n)
		if r.segs[0] = r.segs[0][n:]; len(r.segs[0]) == 0 {
			r.segs = r.segs[1:]
		}
		if err != nil {
			return total, err
		}
	}
	return total, nil
}

type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) { return 0, e.err }

// ServeHTTP serves the Slack Web API at /<method> (any path prefix: the last path
// element names the method). ConnReset hijacks the connection and resets it (or
// aborts the handler with http.ErrAbortHandler where hijacking is unsupported).
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { serveHTTP(s, w, r) }

func serveHTTP(hd handler, w http.ResponseWriter, r *http.Request) {
	body, bodyErr := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
	a := hd.handle(r.URL, r.Header, body, bodyErr)
	if err := ctxsleep.Sleep(r.Context(), a.delay); err != nil {
		return
	}
	if a.reset {
		resetConn(w)
		return
	}
	h := w.Header()
	for k, v := range a.header {
		h[k] = v
	}
	size := a.body.size()
	h.Set("Content-Length", strconv.Itoa(size))
	w.WriteHeader(a.status)
	if a.trunc {
		_, _ = w.Write(a.body.flat()[:size/2]) // a client that hung up has nothing to see
		// Returning with less than Content-Length written makes net/http close the
		// connection; the client sees an unexpected EOF.
		return
	}
	_, _ = (&segReader{segs: a.body}).WriteTo(w) // as above
}

func resetConn(w http.ResponseWriter) {
	hj, ok := w.(http.Hijacker)
	if !ok {
		panic(http.ErrAbortHandler)
	}
	conn, _, err := hj.Hijack()
	if err != nil {
		panic(http.ErrAbortHandler)
	}
	if tcp, ok := conn.(*net.TCPConn); ok {
		_ = tcp.SetLinger(0) // close with RST
	}
	_ = conn.Close() // the reset is the point; its error is not
}
