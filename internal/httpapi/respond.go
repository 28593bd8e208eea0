package httpapi

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"
)

// list is the body of every list endpoint.
type list[T any] struct {
	Items      []T    `json:"items"`
	NextCursor string `json:"next_cursor"`
}

// errorBody is the body of every error response.
type errorBody struct {
	Error string `json:"error"`
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v) // the client went away; nothing left to tell it
}

func writeError(w http.ResponseWriter, code int, format string, args ...any) {
	writeJSON(w, code, errorBody{Error: fmt.Sprintf(format, args...)})
}

// internalError logs err (which may name files) and tells the client only that the
// store failed.
func (a *api) internalError(w http.ResponseWriter, r *http.Request, err error) {
	a.log.Error("http api: store failure", "method", r.Method, "path", r.URL.Path, "err", err)
	writeError(w, http.StatusInternalServerError, "internal error reading the read model (see the daemon's log)")
}

// jsonErrors turns the plain-text errors of http.ServeMux (404 no such route, 405
// wrong method) into {"error": …} bodies, so every error of the API has one shape.
func jsonErrors(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		next.ServeHTTP(&errorRewriter{ResponseWriter: w, r: r}, r)
	})
}

type errorRewriter struct {
	http.ResponseWriter
	r         *http.Request
	swallow   bool
	wroteHead bool
}

func (e *errorRewriter) WriteHeader(code int) {
	if e.wroteHead {
		return
	}
	e.wroteHead = true
	h := e.Header()
	if code < 400 || strings.HasPrefix(h.Get("Content-Type"), "application/json") {
		e.ResponseWriter.WriteHeader(code)
		return
	}
	e.swallow = true
	h.Del("Content-Length")
	msg := http.StatusText(code)
	switch code {
	case http.StatusNotFound:
		msg = fmt.Sprintf("no such endpoint: %s %s", e.r.Method, e.r.URL.Path)
	case http.StatusMethodNotAllowed:
		msg = fmt.Sprintf("method %s not allowed on %s (allowed: %s)", e.r.Method, e.r.URL.Path, h.Get("Allow"))
	}
	writeJSON(e.ResponseWriter, code, errorBody{Error: msg})
}

func (e *errorRewriter) Write(b []byte) (int, error) {
	if !e.wroteHead {
		e.WriteHeader(http.StatusOK)
	}
	if e.swallow {
		return len(b), nil
	}
	return e.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the underlying writer (Flush).
func (e *errorRewriter) Unwrap() http.ResponseWriter { return e.ResponseWriter }

// logRequests writes one debug line per request: method, path, status, duration. It
// logs no header, so neither the bearer token nor anything else a client sends.
func logRequests(log *slog.Logger, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		sw := &statusWriter{ResponseWriter: w, code: http.StatusOK}
		next.ServeHTTP(sw, r)
		log.Debug("http request", "method", r.Method, "path", r.URL.Path, "status", sw.code, "duration", time.Since(start))
	})
}

type statusWriter struct {
	http.ResponseWriter
	code  int
	wrote bool
}

func (s *statusWriter) WriteHeader(code int) {
	if !s.wrote {
		s.code, s.wrote = code, true
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusWriter) Write(b []byte) (int, error) {
	s.wrote = true
	return s.ResponseWriter.Write(b)
}

func (s *statusWriter) Unwrap() http.ResponseWriter { return s.ResponseWriter }
