// Package workspace runs many Slack installations in one daemon: each workspace
// (team_id) has its own store file, Slack client (token, limiters, pacing state),
// poller, change feed and state, and runs on its own goroutines, so that a revoked,
// expired, damaged, slow or rate-limited workspace never stops, slows or starves
// another (Slack's limits are per method, per workspace, per app: their calls are
// independent).
//
// A Supervisor holds the running Units by team_id. Start opens a workspace's store,
// builds its client and poller and runs it; Stop ends it and closes its store;
// Purge also removes its store file, and with it every change, outbox row and
// message of that team (each workspace's feed and outbox live in its own store).
// A Unit that meets what no later tick can fix — a token Slack rejects, a refresh
// that fails, a damaged store — stops on its own and stays listed with its State
// and reason until it is replaced (a new token) or stopped.
//
// The daemon's one-workspace config is the case of one: a Unit whose team_id is
// learned from auth.test, in the store file store.path names.
package workspace
