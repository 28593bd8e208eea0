package slackfake

import "time"

// rateCheck applies Options.RatePerMinute to one request of method by token at now:
// a sliding 60-second window of accepted requests per method for the workspace's own
// tokens (Slack counts per workspace and app, so a rotated token shares its
// predecessor's window), and per (method, token) for foreign tokens. It returns
// ok, or the Retry-After in whole seconds (at least 1) until the window frees a slot.
// Rejected requests do not count. Callers hold s.mu.
func (s *Server) rateCheck(method, token string, now time.Time) (ok bool, retryAfter int) {
	limit := s.opts.RatePerMinute[method]
	if limit <= 0 {
		return true, 0
	}
	key := method
	if _, ours := s.auth.tokens[token]; !ours && method != oauthMethod {
		key = method + "\x00" + token
	}
	times := s.rate[key]
	cut := 0
	for cut < len(times) && !times[cut].After(now.Add(-time.Minute)) {
		cut++
	}
	times = times[cut:]
	if len(times) >= limit {
		s.rate[key] = times
		wait := times[len(times)-limit].Add(time.Minute).Sub(now)
		secs := int((wait + time.Second - 1) / time.Second)
		return false, max(secs, 1)
	}
	s.rate[key] = append(times, now)
	return true, 0
}
