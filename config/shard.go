package config

import (
	"os"
	"strconv"
	"strings"

	"github.com/slackpoll/slackpoll/internal/shard"
)

// Shard configures which workspaces this daemon polls when several replicas (a
// Kubernetes StatefulSet) share them: the replica of ordinal O among R polls the
// workspaces whose team ID internal/shard assigns to O. Replicas 0 or 1 =
// unsharded: this daemon polls every workspace.
type Shard struct {
	Replicas            int  `yaml:"replicas" json:"replicas"`                           // ≥ 0; 0 or 1 = unsharded
	Ordinal             int  `yaml:"ordinal" json:"ordinal"`                             // 0 ≤ Ordinal < Replicas; after Validate, the resolved ordinal
	OrdinalFromHostname bool `yaml:"ordinal_from_hostname" json:"ordinal_from_hostname"` // take Ordinal from the hostname's trailing -N
}

// Assignment is the replica's place as internal/shard takes it. Call it after
// Validate, which resolves ordinal_from_hostname into Ordinal.
func (s Shard) Assignment() shard.Shard {
	return shard.Shard{Ordinal: s.Ordinal, Replicas: s.Replicas}
}

// hostname is os.Hostname, replaced in tests. In a Kubernetes pod it is the pod's
// name: a StatefulSet's pods are named <statefulset>-<ordinal>.
var hostname = os.Hostname

// shard checks shard.* and, with ordinal_from_hostname, sets Ordinal from the
// hostname. A StatefulSet that was scaled without changing shard.replicas would
// leave a pod owning nothing (or two pods computing different owners), so an
// ordinal outside the replicas is an error, not a warning: the pod does not start.
func (v *validator) shard() {
	s := &v.c.Shard
	if s.Replicas < 0 {
		v.fail("shard.replicas", "%d is negative: want the number of replicas sharing the workspaces (a whole number >= 0; 0 = unsharded)", s.Replicas)
		return
	}
	if s.Ordinal < 0 {
		v.fail("shard.ordinal", "%d is negative: want this replica's ordinal, from 0 to shard.replicas - 1", s.Ordinal)
		return
	}
	if s.OrdinalFromHostname {
		if s.Replicas < 1 {
			// Every pod would then poll every workspace: two replicas, one workspace.
			v.fail("shard.replicas", "is %d with shard.ordinal_from_hostname: true: want the StatefulSet's replicas (>= 1), changed together with it", s.Replicas)
			return
		}
		name, err := hostname()
		if err != nil {
			v.fail("shard.ordinal_from_hostname", "the hostname cannot be read (%v): set shard.ordinal instead", err)
			return
		}
		n, ok := hostnameOrdinal(name)
		if !ok {
			v.fail("shard.ordinal_from_hostname", "the hostname %q does not end in -N (a StatefulSet pod's name, e.g. slackpoll-0): run it in a StatefulSet, or set shard.ordinal instead", name)
			return
		}
		// An ordinal already set must agree: Validate sets it, and the printed
		// config (`slackpoll config`) loads again.
		if s.Ordinal != 0 && s.Ordinal != n {
			v.fail("shard.ordinal", "%d is set together with shard.ordinal_from_hostname: true, and the hostname %q gives %d: set one of them (ordinal_from_hostname takes the ordinal from the pod's name)", s.Ordinal, name, n)
			return
		}
		s.Ordinal = n
		if n >= s.Replicas {
			v.fail("shard.ordinal_from_hostname", "the hostname %q gives ordinal %d, but shard.replicas is %d: want an ordinal from 0 to %d; change shard.replicas together with the StatefulSet's replicas", name, n, s.Replicas, s.Replicas-1)
		}
		return
	}
	if s.Replicas > 1 && s.Ordinal >= s.Replicas {
		v.fail("shard.ordinal", "%d is not allowed with shard.replicas %d: want an ordinal from 0 to %d", s.Ordinal, s.Replicas, s.Replicas-1)
	}
	if s.Replicas <= 1 && s.Ordinal != 0 {
		v.fail("shard.ordinal", "%d is set but shard.replicas is %d (unsharded): want 0, or set shard.replicas", s.Ordinal, s.Replicas)
	}
}

// hostnameOrdinal returns N of a hostname ending in -N (decimal digits, no sign,
// no leading zero unless N is 0), as a StatefulSet names its pods; ok is false
// otherwise. A fully qualified name is cut at its first dot.
func hostnameOrdinal(name string) (n int, ok bool) {
	name, _, _ = strings.Cut(name, ".")
	i := strings.LastIndexByte(name, '-')
	if i <= 0 {
		return 0, false
	}
	digits := name[i+1:]
	if digits == "" || len(digits) > 9 || digits[0] == '0' && len(digits) > 1 || strings.TrimLeft(digits, "0123456789") != "" {
		return 0, false
	}
	n, err := strconv.Atoi(digits)
	return n, err == nil
}
