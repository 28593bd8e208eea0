// Package mcp is slackpoll's MCP server (README, "Agents: the MCP server"): read-only
// tools and resources over the read model, for AI agents, on the official Go SDK
// (github.com/modelcontextprotocol/go-sdk). One server, two transports: stdio
// (`slackpoll mcp`, for desktop and coding agents) and Streamable HTTP, stateless, at
// /mcp on http.listen (mounted inside the read API's handler, behind its token, Host
// and cross-origin checks).
//
// The server reads through a Reader: the store (in the daemon, or `slackpoll mcp`
// when no daemon holds it) or the daemon's HTTP API. It calls no Slack method: every
// answer comes from the model, and says how fresh it is — each message's
// last_polled_at, its class (watched, tracked, untracked) and the worst-case
// staleness of that class, from the status report.
//
// The exposure policy (Policy, config mcp.conversations) is applied by the server to
// every tool, resource, search hit, change and notification: an agent sees only the
// conversations it is allowed, and never a DM or group DM that is not listed.
package mcp
