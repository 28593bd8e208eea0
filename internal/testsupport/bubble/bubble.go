// Package bubble runs a benchmark's simulation in a testing/synctest bubble, which
// only a test can open.
package bubble

import (
	"testing"
	"testing/synctest"
)

// Run runs f in a synctest bubble and returns its result to the benchmark b; a
// failed simulation fails b.
func Run[R any](b *testing.B, f func(t *testing.T) R) R {
	b.Helper()
	var out R
	ok := testing.RunTests(func(string, string) (bool, error) { return true, nil }, []testing.InternalTest{{
		Name: b.Name(),
		F:    func(t *testing.T) { synctest.Test(t, func(t *testing.T) { out = f(t) }) },
	}})
	if !ok {
		b.Fatal("the simulation failed")
	}
	return out
}
