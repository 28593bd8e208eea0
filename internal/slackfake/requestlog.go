package slackfake

import (
	"net/url"
	"time"
)

// Request is one logged request.
type Request struct {
	Method string     // "conversations.history"
	Params url.Values // query and form parameters, without token, client_secret and refresh_token
	Time   time.Time  // Options.Now at arrival
	// Status is the HTTP status answered, 0 when the connection was reset.
	Status int
	// Error is Slack's error code of an ok:false or 429 body ("not_in_channel",
	// "ratelimited"); "" on success.
	Error string
	// Fault is the injected fault, FaultNone if none.
	Fault FaultKind
}

// Requests returns a copy of the request log, oldest first.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

// ResetRequests empties the request log.
func (s *Server) ResetRequests() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requests = nil
}

// withoutSecrets copies params, dropping the token and the app's secrets.
func withoutSecrets(params url.Values) url.Values {
	out := make(url.Values, len(params))
	for k, v := range params {
		if k != "token" && k != "client_secret" && k != "refresh_token" {
			out[k] = v
		}
	}
	return out
}
