package httpapi

import (
	"crypto/sha256"
	"crypto/subtle"
	"net/http"
	"slices"
	"strings"
)

// requireToken rejects with 401 every request outside open whose Authorization header
// is not "Bearer <token>"; token "" disables the check. Both sides are hashed before
// the constant-time comparison, so neither the token's bytes nor its length leak
// through timing.
func requireToken(token string, next http.Handler, open ...string) http.Handler {
	if token == "" {
		return next
	}
	want := sha256.Sum256([]byte(token))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if slices.Contains(open, r.URL.Path) {
			next.ServeHTTP(w, r)
			return
		}
		got, ok := bearer(r.Header.Get("Authorization"))
		sum := sha256.Sum256([]byte(got))
		if subtle.ConstantTimeCompare(sum[:], want[:]) != 1 || !ok {
			w.Header().Set("WWW-Authenticate", `Bearer realm="slackpoll"`)
			writeError(w, http.StatusUnauthorized, "missing or wrong bearer token: send \"Authorization: Bearer <http.token>\"")
			return
		}
		next.ServeHTTP(w, r)
	})
}

// bearer extracts the token of an "Authorization: Bearer <token>" header value.
func bearer(header string) (string, bool) {
	scheme, tok, ok := strings.Cut(header, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	return strings.TrimSpace(tok), true
}
