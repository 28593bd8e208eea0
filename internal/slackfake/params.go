package slackfake

import (
	"net/url"
	"strconv"

	"github.com/slackpoll/slackpoll/internal/readmodel"
)

// window is a message range as inclusive integer keys [lo, hi]; empty when lo > hi.
type window struct {
	lo, hi uint64
}

// parseWindow reads oldest, latest and inclusive. Both bounds are exclusive unless
// inclusive is "1" or "true"; oldest defaults to 0 and latest to no bound (every
// stored message). Bad values answer invalid_ts_oldest / invalid_ts_latest.
func parseWindow(p url.Values) (window, *apiErr) {
	incl := p.Get("inclusive") == "1" || p.Get("inclusive") == "true"
	w := window{lo: 0, hi: maxKey}
	if o := p.Get("oldest"); o != "" {
		k, ok := keyOf(readmodel.TS(o))
		if !ok {
			return w, &apiErr{code: "invalid_ts_oldest"}
		}
		w.lo = k
		if !incl {
			if k == maxKey {
				return window{lo: 1, hi: 0}, nil
			}
			w.lo = k + 1
		}
	}
	if l := p.Get("latest"); l != "" {
		k, ok := keyOf(readmodel.TS(l))
		if !ok {
			return w, &apiErr{code: "invalid_ts_latest"}
		}
		w.hi = k
		if !incl {
			if k == 0 {
				return window{lo: 1, hi: 0}, nil
			}
			w.hi = k - 1
		}
	}
	return w, nil
}

// pageLimit reads limit: def when absent or not a positive integer, at most max, and
// at most capN when capN > 0 (the server-side cap).
func pageLimit(p url.Values, def, max, capN int) int {
	n, err := strconv.Atoi(p.Get("limit"))
	if err != nil || n <= 0 {
		n = def
	}
	if n > max {
		n = max
	}
	if capN > 0 && n > capN {
		n = capN
	}
	return n
}

// readableConv checks that the token may read the channel param's messages:
// channel_not_found (unknown, or private and the bot is not a member), missing_scope
// (the type's *:history scope), not_in_channel (a public channel the bot is not in).
// Callers hold s.mu.
func (s *Server) readableConv(p url.Values) (*conv, *apiErr) {
	cv := s.convs[p.Get("channel")]
	if cv == nil || cv.hidden() {
		return nil, &apiErr{code: "channel_not_found"}
	}
	if e := s.needScope(readmodel.HistoryScope(cv.Type())); e != nil {
		return nil, e
	}
	if !cv.BotMember {
		return nil, &apiErr{code: "not_in_channel"}
	}
	return cv, nil
}

// needScope answers missing_scope (with needed and provided) unless the token has
// scope. Callers hold s.mu.
func (s *Server) needScope(scope string) *apiErr {
	if s.scopes[scope] {
		return nil
	}
	return &apiErr{code: "missing_scope", needed: scope, provided: s.scopeHeader()}
}

func tsParam(p url.Values) readmodel.TS { return readmodel.TS(p.Get("ts")) }
