// Package crashtest proves slackpoll's crash safety and rate compliance with the real
// binary: its tests run `slackpoll run` against the fake Slack on loopback, SIGKILL
// it at seeded points (some in the middle of a thread sync), change the workspace
// between restarts, check the store after every kill, and check the request log
// with internal/compliance. The store checks (invariants.go) are exported for other
// tests that leave a store behind.
package crashtest
