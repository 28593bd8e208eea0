package slackapi

import (
	"net/http"
	"sync"
	"time"

	"github.com/slackpoll/slackpoll/internal/readmodel"
)

// skewMeter keeps the difference between Slack's clock and ours, measured from the
// Date header of each answer (RFC 9110 §6.6.1: one-second resolution) against the time
// the answer arrived. A skewed local clock must not decide which messages are new:
// the poller reads its bulk window from Slack's time (poller.Config.ClockSkew).
type skewMeter struct {
	mu     sync.Mutex
	skew   time.Duration
	known  bool // an answer carried a usable Date
	warned bool
}

// observeDate records the skew of one captured answer and returns it, with ok false when
// the answer had no usable Date. It logs a warning when the skew first exceeds
// readmodel.ClockSkewTolerance, and once more when it is back within.
func (c *Client) observeDate(cp *capture) (time.Duration, bool) {
	if !cp.got {
		return 0, false
	}
	date, err := http.ParseTime(cp.header.Get("Date"))
	if err != nil {
		return 0, false
	}
	skew := date.Sub(cp.arrived.Round(0))
	m := &c.skew
	m.mu.Lock()
	defer m.mu.Unlock()
	m.skew, m.known = skew, true
	over := skew > readmodel.ClockSkewTolerance || skew < -readmodel.ClockSkewTolerance
	switch {
	case over && !m.warned:
		m.warned = true
		c.log.Warn("local clock differs from Slack's by more than "+readmodel.ClockSkewTolerance.String()+
			"; the bulk window is read from Slack's time (set the clock right: NTP)",
			"skew", skew.Round(time.Second).String(), "slack_date", date.UTC().Format(time.RFC3339),
			"local", cp.arrived.UTC().Format(time.RFC3339))
	case !over && m.warned:
		m.warned = false
		c.log.Info("local clock agrees with Slack's again", "skew", skew.Round(time.Second).String())
	}
	return skew, true
}

// ClockSkew returns Slack's clock minus ours as last measured from the Date header of
// an answer (positive: our clock is behind), or 0 before any answer carried one.
func (c *Client) ClockSkew() time.Duration {
	c.skew.mu.Lock()
	defer c.skew.mu.Unlock()
	return c.skew.skew
}

// SlackNow returns Slack's time (readmodel.SlackTime: the local clock, corrected by
// the measured skew when it is beyond readmodel.ClockSkewTolerance) and whether an
// answer of this client has told the skew yet; before that, the local clock and
// false.
func (c *Client) SlackNow() (time.Time, bool) {
	skew, known := c.slackSkew()
	return readmodel.SlackTime(time.Now(), skew), known
}

// slackSkew is ClockSkew and whether an answer has told it yet.
func (c *Client) slackSkew() (time.Duration, bool) {
	c.skew.mu.Lock()
	defer c.skew.mu.Unlock()
	return c.skew.skew, c.skew.known
}
