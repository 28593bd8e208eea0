package shard

import (
	"fmt"
	"math"
	"testing"
)

// teams returns n distinct team IDs shaped like Slack's (T and hex digits).
func teams(n int) []string {
	ids := make([]string, n)
	for i := range ids {
		ids[i] = fmt.Sprintf("T%08X", 0x1A2B0000+i*7919)
	}
	return ids
}

// TestKnownAssignments pins the hash: if any of these changes, a release would
// move workspaces between replicas (and two releases could poll one workspace).
// The values came from the first run of this hash; never edit them to make a
// change pass.
func TestKnownAssignments(t *testing.T) {
	for _, c := range []struct {
		team     string
		replicas int
		want     int
	}{
		{"T0001", 2, 0}, {"T0001", 3, 0}, {"T0001", 5, 4}, {"T0001", 8, 7},
		{"T024BE7LD", 2, 1}, {"T024BE7LD", 3, 2}, {"T024BE7LD", 5, 4}, {"T024BE7LD", 8, 5},
		{"T0AAAAAAA", 2, 0}, {"T0AAAAAAA", 3, 2}, {"T0AAAAAAA", 5, 4}, {"T0AAAAAAA", 8, 6},
		{"TBBBBBBBB", 2, 1}, {"TBBBBBBBB", 3, 1}, {"TBBBBBBBB", 5, 3}, {"TBBBBBBBB", 8, 5},
		{"E0CCCCCCC", 2, 0}, {"E0CCCCCCC", 3, 2}, {"E0CCCCCCC", 5, 2}, {"E0CCCCCCC", 8, 2},
	} {
		if got := Owner(c.team, c.replicas); got != c.want {
			t.Errorf("Owner(%q, %d) = %d, want %d: the assignment hash changed", c.team, c.replicas, got, c.want)
		}
	}
	// The weight's bytes, computed outside Go: printf 'T0001\0000' | sha256sum.
	if got, want := weight("T0001", 0), uint64(0x8a7eabd07d661350); got != want {
		t.Errorf("weight(T0001, 0) = %#x, want %#x", got, want)
	}
	if got, want := weight("T024BE7LD", 3), uint64(0x8fcb7efe9c9ad66e); got != want {
		t.Errorf("weight(T024BE7LD, 3) = %#x, want %#x", got, want)
	}
}

// TestBalance: over 10,000 teams, every replica of 2..8 owns within ±10% of a
// fair share.
func TestBalance(t *testing.T) {
	ids := teams(10000)
	for n := 2; n <= 8; n++ {
		counts := make([]int, n)
		for _, id := range ids {
			counts[Owner(id, n)]++
		}
		fair := float64(len(ids)) / float64(n)
		for i, c := range counts {
			if math.Abs(float64(c)-fair) > 0.10*fair {
				t.Errorf("%d replicas: ordinal %d owns %d teams, want %.0f ± 10%% (all: %v)", n, i, c, fair, counts)
			}
		}
	}
}

// TestAddingAReplicaMovesTeamsOnlyToIt: from n to n+1 replicas, a team either
// stays where it was or moves to the new ordinal n, and about 1/(n+1) move.
func TestAddingAReplicaMovesTeamsOnlyToIt(t *testing.T) {
	ids := teams(10000)
	for n := 1; n <= 8; n++ {
		moved := 0
		for _, id := range ids {
			before, after := Owner(id, n), Owner(id, n+1)
			if before == after {
				continue
			}
			moved++
			if after != n {
				t.Fatalf("%s: %d → %d replicas moved it from ordinal %d to %d, want only to the new ordinal %d", id, n, n+1, before, after, n)
			}
		}
		want := float64(len(ids)) / float64(n+1)
		if math.Abs(float64(moved)-want) > 0.10*want {
			t.Errorf("%d → %d replicas moved %d teams, want about %.0f (1/%d) ± 10%%", n, n+1, moved, want, n+1)
		}
	}
}

// TestExactlyOneOwner: for each team, exactly one Shard of the set owns it, and
// it is Owner's ordinal; unsharded (0 or 1 replicas) owns everything.
func TestExactlyOneOwner(t *testing.T) {
	for _, id := range append(teams(2000), "", "T", "E0CCCCCCC", "\x00") {
		for n := 2; n <= 8; n++ {
			owners := 0
			for i := range n {
				if (Shard{Ordinal: i, Replicas: n}).Owns(id) {
					owners++
					if o := Owner(id, n); o != i {
						t.Fatalf("Shard{%d, %d}.Owns(%q) but Owner = %d", i, n, id, o)
					}
				}
			}
			if owners != 1 {
				t.Fatalf("%q among %d replicas has %d owners, want 1", id, n, owners)
			}
		}
		for _, s := range []Shard{{0, 0}, {0, 1}, {3, 0}} {
			if !s.Owns(id) {
				t.Errorf("%+v (unsharded) does not own %q", s, id)
			}
		}
		if o := Owner(id, 0); o != 0 {
			t.Errorf("Owner(%q, 0) = %d, want 0", id, o)
		}
	}
}
