package readmodel

import (
	"bytes"
	"testing"
)

func TestParseTS(t *testing.T) {
	for _, s := range []string{"1718906000.000100", "1754467200.123456", "999999999.000001", "1718906000", "1.5"} {
		if _, err := ParseTS(s); err != nil {
			t.Errorf("ParseTS(%q) = %v, want ok", s, err)
		}
	}
	for _, s := range []string{"", ".", "abc", "1718906000.", "1718906000.1234567", "-1.000000", "1e9.000000", "17189 06000.000100", "1.2.3"} {
		if _, err := ParseTS(s); err == nil {
			t.Errorf("ParseTS(%q) accepted, want error", s)
		}
	}
}

func TestTSKeyOrderIsTimeOrder(t *testing.T) {
	ordered := []TS{"999999999.000001", "1700000002.000100", "1700000002.000200", "1700000002.5", "1700000010.000100"}
	for i := 1; i < len(ordered); i++ {
		a, b := ordered[i-1].Key(), ordered[i].Key()
		if bytes.Compare(a[:], b[:]) >= 0 {
			t.Errorf("key(%s) >= key(%s)", ordered[i-1], ordered[i])
		}
		if ordered[i-1].Compare(ordered[i]) >= 0 {
			t.Errorf("Compare(%s, %s) >= 0", ordered[i-1], ordered[i])
		}
	}
	if TS("1.5").Compare("1.500000") != 0 {
		t.Error(`"1.5" and "1.500000" differ in time`)
	}
}

func FuzzTSKey(f *testing.F) {
	for _, s := range []string{"1718906000.000100", "999999999.000001", "1.5", "", "x.y"} {
		f.Add(s, "1700000000.000000")
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		ta, tb := TS(a), TS(b)
		if !ta.Valid() || !tb.Valid() {
			return
		}
		ka, kb := ta.Key(), tb.Key()
		if got, want := bytes.Compare(ka[:], kb[:]), ta.Compare(tb); got != want {
			t.Fatalf("key order %d != time order %d for %q, %q", got, want, a, b)
		}
	})
}
