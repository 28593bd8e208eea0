package slackfake

import (
	"net/url"
	"time"
)

// FaultKind is a kind of injected failure.
type FaultKind int

// Fault kinds. Each names how the failure looks to a client.
const (
	// FaultNone is the zero value: no fault.
	FaultNone FaultKind = iota
	// Status5xx answers an HTML body with Fault.Status (default 503), as Slack's edge
	// does; slack-go returns slack.StatusCodeError.
	Status5xx
	// ConnReset drops the connection without a response: the in-memory transport
	// returns an ECONNRESET error, the handler hijacks the connection and resets it.
	ConnReset
	// Slow delays the response by Fault.Delay (default 5 minutes) on the runtime
	// clock (fake inside synctest), abandoning it when the request's context ends.
	Slow
	// MalformedJSON answers HTTP 200 with a body that is not JSON
	// (*json.SyntaxError in slack-go).
	MalformedJSON
	// TruncatedBody declares the full Content-Length but sends only half the body
	// (io.ErrUnexpectedEOF).
	TruncatedBody
	// BadMessage writes latest_reply as a JSON number in one message of a history or
	// replies page: slack-go fails the whole page with *json.UnmarshalTypeError.
	BadMessage
	// RateLimitNoRetryAfter answers HTTP 429 ratelimited without a Retry-After header
	// (slack-go returns slack.StatusCodeError{Code: 429}).
	RateLimitNoRetryAfter
	// RepeatCursor answers a request that carries a cursor with the page it names but
	// next_cursor equal to the cursor sent (has_more true): a client that trusts
	// cursors loops.
	RepeatCursor
	// InvalidCursor answers a request that carries a cursor with invalid_cursor, as for
	// an expired cursor.
	InvalidCursor
)

var faultNames = [...]string{"none", "5xx", "conn_reset", "slow", "malformed_json",
	"truncated_body", "bad_message", "ratelimit_no_retry_after", "repeat_cursor", "invalid_cursor"}

func (k FaultKind) String() string {
	if k >= 0 && int(k) < len(faultNames) {
		return faultNames[k]
	}
	return "fault(?)"
}

// Fault is one queued failure. It applies to the next Times (default 1) requests of
// Method ("" = any method) to which its kind applies: BadMessage to history and replies
// pages with at least one message, RepeatCursor and InvalidCursor to requests of a
// paginated method that carry a cursor, the others to any request.
type Fault struct {
	Method string
	Kind   FaultKind
	Times  int
	// Delay is the Slow delay; default 5 minutes.
	Delay time.Duration
	// Status is the Status5xx status; default 503.
	Status int
}

const defaultSlowDelay = 5 * time.Minute

// InjectFault queues f. Queued faults are applied first come, first served.
func (s *Server) InjectFault(f Fault) {
	if f.Times <= 0 {
		f.Times = 1
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults = append(s.faults, f)
}

// SetFaultRate makes each request, with probability p drawn from the generator seeded
// by Options.Seed, suffer one of kinds chosen uniformly (no fault if that kind does not
// apply to the request). p <= 0 or no kinds switches random faults off. Queued faults
// take precedence. For a given seed and request sequence the faults are the same.
func (s *Server) SetFaultRate(kinds []FaultKind, p float64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faultKs = append([]FaultKind(nil), kinds...)
	s.faultP = p
}

// ClearFaults drops queued faults and switches random faults off.
func (s *Server) ClearFaults() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults = nil
	s.faultKs = nil
	s.faultP = 0
}

var paginated = map[string]bool{
	"conversations.history": true, "conversations.replies": true,
	"conversations.list": true, "users.conversations": true,
}

func faultApplies(k FaultKind, method string, params url.Values) bool {
	switch k {
	case BadMessage:
		return method == "conversations.history" || method == "conversations.replies"
	case RepeatCursor, InvalidCursor:
		return paginated[method] && params.Get("cursor") != ""
	case FaultNone:
		return false
	}
	return true
}

// drawFault picks the fault for one request. Callers hold s.mu.
func (s *Server) drawFault(method string, params url.Values) Fault {
	for i := range s.faults {
		f := &s.faults[i]
		if (f.Method == "" || f.Method == method) && faultApplies(f.Kind, method, params) {
			got := *f
			f.Times--
			if f.Times <= 0 {
				s.faults = append(s.faults[:i], s.faults[i+1:]...)
			}
			return got
		}
	}
	if s.faultP > 0 && len(s.faultKs) > 0 && s.rng.Float64() < s.faultP {
		k := s.faultKs[s.rng.IntN(len(s.faultKs))]
		if faultApplies(k, method, params) {
			f := Fault{Kind: k}
			if k == Status5xx {
				f.Status = [...]int{500, 502, 503, 504}[s.rng.IntN(4)]
			}
			return f
		}
	}
	return Fault{}
}
