// Package compliance checks, from a log of the HTTP requests a Slack client made,
// that it kept the pacing contract of README, "How it works": no method above its configured
// rate in any sliding 60-second window, calls evenly spaced (burst 1), no call before
// a Retry-After it was given has passed, and no early call after a restart.
//
// The log is a []Call, taken either from a Recorder wrapped around the fake Slack
// (which also sees the Retry-After header of every 429) or from the fake's own
// request log through FromFake (which does not). The checks run on arrival times at
// the server, which trail the client's send times by a variable latency (including
// the bbolt commit the client makes before each attempt); the jitter argument is
// that tolerance, and the checks are written so that a client that sends on time can
// never fail them while one that sends early by more than jitter always does.
package compliance
