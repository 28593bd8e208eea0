package config

import (
	"regexp"
	"strconv"
	"strings"
)

// keyChange is a key an earlier release read that this one reads differently. A
// config file written for that release keeps working: a renamed key's value is
// taken as its new key's, and a removed key is ignored, each with a Warning that says
// what to write instead. An entry stays for at least one minor release after the
// release that made the change, and CHANGELOG.md's "Upgrading" section lists it; only
// then may the key become an unknown-key error.
type keyChange struct {
	// key is the path as earlier releases read it; "[]" stands for any index of a
	// list ("webhooks[].secret").
	key string
	// to is the key it became, under the same parent mapping; "" when it was
	// removed because it no longer means anything.
	to string
	// note says what the operator should know beyond the new name.
	note string
}

// keyChanges is every renamed or removed key, in the order they changed.
var keyChanges = []keyChange{
	{
		key: "budget.history_pages", to: "budget.history_calls",
		note: "it now caps every conversations.history call of a tick (head reads and tail ranges), not only bulk pages: check the value (default 250)",
	},
	{
		key:  "budget.tail_fetches",
		note: "tail reads are conversations.history ranges now, capped by budget.history_calls",
	},
}

// Warning is a problem that does not stop the config from loading: a renamed or
// removed key of an earlier release. Its message names the file, the line, the key
// as written and what to write instead; like Error, never a secret value.
type Warning struct {
	File string
	Line int
	Key  string // the key path as written, e.g. "budget.history_pages"
	Msg  string
}

func (w Warning) String() string {
	return (&Error{File: w.File, Line: w.Line, Key: w.Key, Msg: w.Msg}).Error()
}

// Warnings returns what Load accepted with a warning, in file order; nil for
// Default or a config without any. Callers show them to the operator (the CLI logs
// each at startup).
func (c *Config) Warnings() []Warning {
	if c.src == nil {
		return nil
	}
	return c.src.warnings
}

var listIndex = regexp.MustCompile(`\[\d+\]`)

// lookupKeyChange returns the change of the key at path (list indexes match "[]").
func lookupKeyChange(path string) (keyChange, bool) {
	pattern := listIndex.ReplaceAllString(path, "[]")
	for _, kc := range keyChanges {
		if kc.key == pattern {
			return kc, true
		}
	}
	return keyChange{}, false
}

// newName is the last element of kc.to: the key to read the value as, in the same
// mapping as the old key.
func (kc keyChange) newName() string {
	return kc.to[strings.LastIndex(kc.to, ".")+1:]
}

// message is the warning for the old key; newPath is the path its value is used as
// ("" for a removed key).
func (kc keyChange) message(newPath string) string {
	if kc.to == "" {
		return "no longer used and ignored: remove it (" + kc.note + ")"
	}
	return "renamed to " + newPath + ": its value is used as " + newPath +
		"; write " + newPath + " instead, as the old name will be refused in a later minor release (" + kc.note + ")"
}

// conflict is the error for a mapping that sets both the old key (at oldLine) and its
// new one.
func (kc keyChange) conflict(path string, oldLine int) string {
	return "both " + path + " (line " + strconv.Itoa(oldLine) + ") and the key it was renamed to, " +
		kc.newName() + ", are set: remove " + path
}
