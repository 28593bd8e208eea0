package slackfake

import (
	"encoding/base64"
	"strings"

	"github.com/slackpoll/slackpoll/internal/readmodel"
)

// Cursors are opaque base64 strings shaped like Slack's: "next_ts:<seconds><µs>" for
// messages (bmV4dF90czoxNTEyMDg1ODYxMDAwNTQz = next_ts:1512085861000543) and
// "team:<id>" for conversation lists (dGVhbTpDMDYxRkE1UEI= = team:C061FA5PB). A cursor
// names the first item of the next page.

func tsCursor(ts readmodel.TS) string {
	whole, frac, _ := strings.Cut(string(ts), ".")
	return base64.StdEncoding.EncodeToString([]byte("next_ts:" + whole + frac))
}

// parseTSCursor returns the ts key a message cursor names.
func parseTSCursor(c string) (uint64, bool) {
	raw, err := base64.StdEncoding.DecodeString(c)
	if err != nil {
		return 0, false
	}
	digits, ok := strings.CutPrefix(string(raw), "next_ts:")
	if !ok || len(digits) < 7 || len(digits) > 19+6 {
		return 0, false
	}
	return keyOf(readmodel.TS(digits[:len(digits)-6] + "." + digits[len(digits)-6:]))
}

func idCursor(id string) string {
	return base64.StdEncoding.EncodeToString([]byte("team:" + id))
}

func parseIDCursor(c string) (string, bool) {
	raw, err := base64.StdEncoding.DecodeString(c)
	if err != nil {
		return "", false
	}
	id, ok := strings.CutPrefix(string(raw), "team:")
	return id, ok && id != ""
}
