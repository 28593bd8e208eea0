package mcp

import (
	"encoding/base64"
	"errors"
	"strings"
)

// Cursors are opaque to agents: a kind and a position, base64, versioned by the
// prefix so that a cursor of one tool is refused by another. They carry no state of
// the server's: any server over the same model continues them (stdio and HTTP alike,
// and across a daemon starting or stopping).
const cursorVersion = "c1"

var errBadCursor = errors.New("invalid cursor: pass next_cursor of the previous answer unchanged, with the same other arguments")

func encodeCursor(kind, pos string) string {
	return base64.RawURLEncoding.EncodeToString([]byte(cursorVersion + ":" + kind + ":" + pos))
}

// decodeCursor returns the position of a cursor of kind; "" for no cursor.
func decodeCursor(kind, c string) (string, error) {
	if c == "" {
		return "", nil
	}
	raw, err := base64.RawURLEncoding.DecodeString(c)
	if err != nil {
		return "", errBadCursor
	}
	pos, ok := strings.CutPrefix(string(raw), cursorVersion+":"+kind+":")
	if !ok || pos == "" {
		return "", errBadCursor
	}
	return pos, nil
}
