package config

import (
	"errors"
	"strings"
	"testing"
)

// withHostname makes Validate see name as the hostname for the test.
func withHostname(t *testing.T, name string, err error) {
	t.Helper()
	old := hostname
	hostname = func() (string, error) { return name, err }
	t.Cleanup(func() { hostname = old })
}

func TestShardDefaultIsUnsharded(t *testing.T) {
	c := mustLoad(t, "")
	if c.Shard != (Shard{}) {
		t.Errorf("default shard = %+v, want the zero value (unsharded)", c.Shard)
	}
	if a := c.Shard.Assignment(); !a.Owns("T0AAAAAAA") || !a.Owns("T0BBBBBBB") {
		t.Errorf("the default assignment %+v does not own every team", a)
	}
}

func TestShardValid(t *testing.T) {
	c := mustLoad(t, "shard: {replicas: 3, ordinal: 2}\n")
	if got, want := c.Shard.Assignment(), (Shard{Replicas: 3, Ordinal: 2}).Assignment(); got != want {
		t.Errorf("assignment = %+v, want %+v", got, want)
	}
	withHostname(t, "slackpoll-1", nil)
	c = mustLoad(t, "shard: {replicas: 2, ordinal_from_hostname: true}\n")
	if c.Shard.Ordinal != 1 || c.Shard.Replicas != 2 {
		t.Errorf("from hostname slackpoll-1: shard = %+v, want ordinal 1 of 2", c.Shard)
	}
	// The printed config loads again in the same pod (the ordinal it shows agrees).
	c = mustLoad(t, "shard: {replicas: 2, ordinal: 1, ordinal_from_hostname: true}\n")
	if c.Shard.Ordinal != 1 {
		t.Errorf("ordinal = %d, want 1", c.Shard.Ordinal)
	}
	withHostname(t, "slackpoll-10.slackpoll.default.svc.cluster.local", nil)
	if c = mustLoad(t, "shard: {replicas: 11, ordinal_from_hostname: true}\n"); c.Shard.Ordinal != 10 {
		t.Errorf("from a fully qualified name: ordinal = %d, want 10", c.Shard.Ordinal)
	}
}

func TestShardValidationErrors(t *testing.T) {
	for _, tc := range []struct {
		name, host, content, key, want string
	}{
		{"negative replicas", "", "shard:\n  replicas: -1\n", "shard.replicas",
			`slackpoll.yaml: line 2: shard.replicas: -1 is negative: want the number of replicas sharing the workspaces (a whole number >= 0; 0 = unsharded)`},
		{"negative ordinal", "", "shard: {replicas: 2, ordinal: -1}\n", "shard.ordinal", `shard.ordinal: -1 is negative: want this replica's ordinal, from 0 to shard.replicas - 1`},
		{"ordinal past replicas", "", "shard: {replicas: 2, ordinal: 2}\n", "shard.ordinal", `shard.ordinal: 2 is not allowed with shard.replicas 2: want an ordinal from 0 to 1`},
		{"ordinal unsharded", "", "shard: {ordinal: 1}\n", "shard.ordinal", `shard.ordinal: 1 is set but shard.replicas is 0 (unsharded)`},
		{"ordinal not a number", "", "shard: {ordinal: one}\n", "shard.ordinal", `shard.ordinal: "one" is not a whole number`},
		{"no suffix", "slackpoll", "shard: {replicas: 2, ordinal_from_hostname: true}\n", "shard.ordinal_from_hostname",
			`shard.ordinal_from_hostname: the hostname "slackpoll" does not end in -N (a StatefulSet pod's name, e.g. slackpoll-0): run it in a StatefulSet, or set shard.ordinal instead`},
		{"suffix not a number", "slackpoll-7f9c8d", "shard: {replicas: 2, ordinal_from_hostname: true}\n", "shard.ordinal_from_hostname", `the hostname "slackpoll-7f9c8d" does not end in -N`},
		{"suffix leading zero", "slackpoll-01", "shard: {replicas: 2, ordinal_from_hostname: true}\n", "shard.ordinal_from_hostname", `the hostname "slackpoll-01" does not end in -N`},
		{"empty hostname", "", "shard: {replicas: 2, ordinal_from_hostname: true}\n", "shard.ordinal_from_hostname", `the hostname "" does not end in -N`},
		{"hostname past replicas", "slackpoll-2", "shard: {replicas: 2, ordinal_from_hostname: true}\n", "shard.ordinal_from_hostname",
			`shard.ordinal_from_hostname: the hostname "slackpoll-2" gives ordinal 2, but shard.replicas is 2: want an ordinal from 0 to 1; change shard.replicas together with the StatefulSet's replicas`},
		{"hostname without replicas", "slackpoll-0", "shard: {ordinal_from_hostname: true}\n", "shard.replicas",
			`shard.replicas: is 0 with shard.ordinal_from_hostname: true: want the StatefulSet's replicas (>= 1), changed together with it`},
		{"hostname disagrees with ordinal", "slackpoll-1", "shard: {replicas: 3, ordinal: 2, ordinal_from_hostname: true}\n", "shard.ordinal",
			`shard.ordinal: 2 is set together with shard.ordinal_from_hostname: true, and the hostname "slackpoll-1" gives 1: set one of them`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			withHostname(t, tc.host, nil)
			c, err := Load(writeConfig(t, tc.content))
			if err == nil {
				t.Fatalf("no error; config:\n%s", c)
			}
			var e *Error
			if !errors.Is(err, ErrInvalid) || !errors.As(err, &e) || e.Key != tc.key {
				t.Errorf("first *Error key = %q, want %q, matching ErrInvalid (%v)", keyOf(e), tc.key, err)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error\n  %v\ndoes not contain\n  %s", err, tc.want)
			}
		})
	}
}

func TestShardHostnameUnreadable(t *testing.T) {
	withHostname(t, "", errors.New("uname failed"))
	_, err := Load(writeConfig(t, "shard: {replicas: 2, ordinal_from_hostname: true}\n"))
	if err == nil || !strings.Contains(err.Error(), "shard.ordinal_from_hostname: the hostname cannot be read (uname failed): set shard.ordinal instead") {
		t.Errorf("error = %v, want the hostname's error and what to do", err)
	}
}
