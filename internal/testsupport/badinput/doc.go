// Package badinput holds the catalog of bad inputs slackpoll must survive, as table
// tests: malformed Slack answers served to the real Slack client and poller over a
// bbolt store that already holds data (slack_test.go), and bad configurations run
// through the command line (config_test.go). Every case ends in a clear error or a
// per-item skip — never a panic, never stored data lost, and the exit status of
// README, "Commands". The package has no code of its own.
package badinput
