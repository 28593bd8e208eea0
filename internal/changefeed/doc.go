// Package changefeed serves slackpoll's change feed and runs its outbox (README,
// "Change feed" and "Webhooks").
//
// The changes themselves are written by the poller's writer (internal/readmodel), in
// the transaction of the read that showed them, with an outbox row per matching
// webhook. This package reads them (Read, for GET /v1/changes and `slackpoll
// changes`), wakes long polls (Notifier), prunes them by retention (Prune), and holds
// the outbox's rules (Outbox): rows are claimed with a random token and a lease in
// one transaction, completed only while the claim is held (the fence), backed off and
// parked on failure, and freed only by their lease expiring. Delivery over HTTP is
// internal/webhook's job.
package changefeed
