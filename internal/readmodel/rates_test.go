package readmodel

import "testing"

func TestProfileRates(t *testing.T) {
	nm, ok := ProfileRates(ProfileNonMarketplace)
	if !ok || nm[MethodHistory] != 1 || nm[MethodReplies] != 1 {
		t.Fatalf("non_marketplace = %v, want history and replies at 1/min", nm)
	}
	in, _ := ProfileRates(ProfileInternal)
	if in[MethodHistory] != 50 || in[MethodReplies] != 50 {
		t.Fatalf("internal = %v, want history and replies at 50/min", in)
	}
	for _, p := range Profiles() {
		r, _ := ProfileRates(p)
		for _, m := range Methods() {
			if r[m] <= 0 {
				t.Errorf("profile %s has no rate for %s", p, m)
			}
		}
	}
	nm[MethodHistory] = 99
	if again, _ := ProfileRates(ProfileNonMarketplace); again[MethodHistory] != 1 {
		t.Error("ProfileRates returned a shared map")
	}
	if _, ok := ProfileRates("tier9"); ok {
		t.Error("unknown profile accepted")
	}
}
