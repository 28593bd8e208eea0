package httpapi

import (
	"mime"
	"net"
	"net/http"
	"strings"
)

// checkHost refuses (403) a request whose Host names neither a loopback name
// (localhost, *.localhost), an IP address, the host of the configured listen
// address, nor one of allowed (http.allowed_hosts: a service name). A web page on
// evil.example that re-resolves its name to 127.0.0.1 (DNS rebinding) reaches the
// API with Host: evil.example; an IP literal cannot be re-resolved, so it is served.
func checkHost(listen string, allowed []string, next http.Handler) http.Handler {
	own, _, err := net.SplitHostPort(listen)
	if err != nil {
		own = ""
	}
	own = strings.ToLower(own)
	names := map[string]bool{}
	for _, a := range allowed {
		names[strings.ToLower(a)] = true
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		host := strings.ToLower(r.Host)
		if h, _, err := net.SplitHostPort(host); err == nil {
			host = h
		}
		host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
		if host == "localhost" || strings.HasSuffix(host, ".localhost") || net.ParseIP(host) != nil || own != "" && host == own || names[host] {
			next.ServeHTTP(w, r)
			return
		}
		writeError(w, http.StatusForbidden, "Host %.80q is not this API's: use localhost, an IP address or the host of http.listen, or add the name to http.allowed_hosts", r.Host)
	})
}

// crossOrigin refuses (403) a request that changes state (POST, PUT, PATCH, DELETE)
// sent by a web page of another origin, as the browser tells it: Sec-Fetch-Site
// cross-site or same-site, or, from a browser that does not send it, an Origin
// whose host is not the request's Host. Requests of other programs carry neither
// and pass. This is the standard library's http.CrossOriginProtection; the MCP spec
// asks every server to refuse a foreign Origin, and requireJSON alone would leave
// that to the browser's preflight.
func crossOrigin(next http.Handler) http.Handler {
	p := http.NewCrossOriginProtection()
	p.SetDenyHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusForbidden, "a request from a web page of another origin (Origin %.80q) is refused: the API is closed to web pages", r.Header.Get("Origin"))
	}))
	return p.Handler(next)
}

// requireJSON refuses (415) a POST, PUT or PATCH whose Content-Type is not
// application/json. A web page can send a cross-origin POST without a CORS preflight
// only as text/plain, a form or multipart; requiring JSON makes the browser ask
// first, and the API answers no CORS. (DELETE always needs a preflight.)
func requireJSON(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.Method {
		case http.MethodPost, http.MethodPut, http.MethodPatch:
			mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
			if err != nil || mt != "application/json" {
				writeError(w, http.StatusUnsupportedMediaType, "send the body as Content-Type: application/json")
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}
