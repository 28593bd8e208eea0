// Package shard assigns workspaces (Slack team IDs) to the replicas of a
// StatefulSet by rendezvous (highest-random-weight) hashing: each replica
// ordinal gets a weight for each team, and the team belongs to the ordinal of
// the highest weight. The owner is a pure function of (team ID, replica count),
// so every replica computes the same answer without talking to the others, and
// going from n to n+1 replicas moves a team only when the new ordinal's weight
// beats all the old ones: about 1/(n+1) of the teams move, and all of them to
// the new replica.
//
// The weight is the first 8 bytes (big-endian) of SHA-256 over the team ID, a
// zero byte and the ordinal in decimal. It must never change across releases:
// a change would move workspaces between replicas on upgrade, and two replicas
// of different releases could both poll one workspace. TestKnownAssignments
// pins it.
package shard

import (
	"crypto/sha256"
	"encoding/binary"
	"strconv"
)

// Shard is one replica's place among Replicas replicas: Ordinal is its index
// (0 ≤ Ordinal < Replicas, the StatefulSet pod's ordinal). Replicas ≤ 1 means
// unsharded: the one replica owns every team.
type Shard struct {
	Ordinal  int
	Replicas int
}

// Owns reports whether the replica s owns teamID: always with Replicas ≤ 1,
// else when Owner(teamID, Replicas) is s.Ordinal.
func (s Shard) Owns(teamID string) bool {
	if s.Replicas <= 1 {
		return true
	}
	return Owner(teamID, s.Replicas) == s.Ordinal
}

// Owner returns the ordinal (0 ≤ ordinal < replicas) of the replica that owns
// teamID among replicas replicas; 0 when replicas ≤ 1. Equal weights (a 2^-64
// chance) go to the lower ordinal, so there is always exactly one owner.
func Owner(teamID string, replicas int) int {
	best, bestW := 0, uint64(0)
	for i := range max(replicas, 1) {
		if w := weight(teamID, i); i == 0 || w > bestW {
			best, bestW = i, w
		}
	}
	return best
}

// weight is the team's random weight on one ordinal (see the package doc; the
// bytes hashed are part of the contract).
func weight(teamID string, ordinal int) uint64 {
	h := sha256.New()
	h.Write([]byte(teamID))
	h.Write([]byte{0})
	h.Write(strconv.AppendInt(nil, int64(ordinal), 10))
	var sum [sha256.Size]byte
	return binary.BigEndian.Uint64(h.Sum(sum[:0]))
}
