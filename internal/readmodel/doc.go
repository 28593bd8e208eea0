// Package readmodel is slackpoll's domain: the read model of Slack conversations
// (messages, threads, reactions, users) and the words used for it; the ports it is
// read and written through (Store and Tx, Source); the Writer, the one place the model
// is written, which applies replace-on-read and records each change in the same
// transaction; and the change kinds. It imports the standard library only: bbolt
// lives in internal/boltstore, slack-go in internal/slackapi, the scheduler that
// decides what to read when in internal/poller, the export format (the model as
// JSON Lines) in internal/export.
//
// # One pass
//
// A tick of the poller (internal/poller) reads Slack and writes here:
//
//	poller.Poller.Run           a tick at once, then every tick.interval
//	  setup, in turn            auth.test (once per process), users.conversations
//	                            (discover: member), conversations.info where due,
//	                            the watched set
//	  streams, at once          one per Slack method, each with its cap (budget:)
//	    conversations.history   head reads (walks of the bulk window), tail ranges
//	    conversations.replies   queued threads, locate, the thread rotation
//	    users.info              the users the others' messages name
//	    reactions.get           watched messages (with reactions:read)
//	  each call                 through the seam (poller's tick.do): soft deadline,
//	                            cap, count, Source call (internal/slackapi: pacing,
//	                            Retry-After, retries), what a failure means
//	  each read's write         through Writer: one Store transaction that replaces
//	                            what was read, appends a Change for each difference
//	                            (feedTx) and an OutboxRow for each webhook it matches
//	  after each commit         WriterOptions.OnChanges: long polls wake, webhook
//	                            deliverers (internal/webhook) claim their rows
//
// # Replace on read
//
// The contract the Writer applies (README, "Replace on read"): state is written only
// for what was actually fetched, and replaced whole (a message without a reactions key
// has none); a fetch cut short writes nothing; absence is not erasure — only a
// complete read covering a ts (a tail range or a bulk window walk read to its empty
// cursor) marks a message it did not return missing; a tombstone marks its parent
// deleted and keeps its last content; a conversation that cannot be read keeps its
// data and says why in its status.
//
// # Glossary
//
// The words below are used throughout the code, the store's layout
// (internal/boltstore/doc.go) and the README.
//
//   - anchor: the tail entry whose own read is the oldest (or, for the watched
//     share, the stalest watched message): it picks the tile the next tail range
//     reads.
//   - baseline: a conversation's first complete walk of its bulk window
//     (Conversation.Baselined, FeedFrom). A message first read with a ts at or
//     below it is history being filled in, not news: no message_posted or
//     reply_added unless changes.backfill is on.
//   - bulk window: how far back a head read reads (window.bulk, 72h), placed by
//     Slack's clock.
//   - deferred parent: a thread parent with replies read while the store did not
//     hold it read; it is stored together with its thread, in one transaction, so
//     that no parent stands without its replies.
//   - head, head read: a conversation's newest messages, read by walking its bulk
//     window newest first (Conversation.HeadReadAt). The head bound
//     (tracking.head_max_age) is how long a head may go unread.
//   - locate: one conversations.replies call (ts = the message, limit 1) that finds
//     the thread of a tracked message a complete history read did not return: a
//     thread reply, which conversations.history never returns.
//   - missing: a message a complete read covering its ts did not return
//     (Message.MissingSince); it keeps its content. Reappeared: read again since.
//   - page cap: the most messages a conversations.history page holds (15 for an app
//     outside the Marketplace, 999 otherwise), learned from Slack's answers; a tail
//     range covers one page.
//   - physical limit: the least time the configured rates allow for re-reading every
//     tracked message and thread (Staleness.PhysicalLimit).
//   - placeholder: a record with no content and no last_polled_at (never read): a
//     message tracked before any read, an undecodable message a walk met, the
//     parent of a reply stored without it. Never read sorts first in the tail.
//   - record key: a key of the caller's (a ticket number) attached to a message
//     (Message.Record); a record-keyed message is watched.
//   - retired: a top-level message older than tracking.horizon and not watched
//     (Message.Retired): kept, no longer in the rotation.
//   - rotation: re-reading every tracked message and thread, least recently read
//     first; the rotation period is the time it takes (Staleness.RotationPeriod).
//   - seam: the one place the poller calls Slack (poller's tick.do).
//   - soft deadline: the time after a tick's start at which no new call starts
//     (tick.soft_deadline); a call in flight is never cut.
//   - stream: the calls of one Slack method within a tick, concurrent with the
//     others, each with its own cap.
//   - sweep: a read of a conversation's bulk window (a fresh walk, or the rest of
//     one cut short); a complete one sets Conversation.LastSweptAt. A configured
//     conversation not swept yet has status pending.
//   - tail, tail index: the tracked messages ordered by Message.RotatedAt, never
//     read first (Tx.TailOldest): the order of the rotation.
//   - tail range: one conversations.history call (oldest, latest, inclusive, limit
//     = the page cap) re-reading up to a page of consecutive stored messages: one
//     tile.
//   - thread read, thread sync: conversations.replies read to its empty cursor,
//     written whole with the reply watermark last.
//   - tick: one bounded pass of the poller (tick.interval apart).
//   - tile: a fixed, page-sized run of a conversation's stored timeline, numbered
//     from its oldest message (Tx.TimelineTile); tiles move only when the store's
//     contents do, so a rotation reads each once.
//   - tombstone: what Slack shows in place of a deleted thread parent whose
//     replies live on (subtype tombstone).
//   - tracked: a stored top-level message in the rotation (Message.IsTracked);
//     replies are refreshed through their parent's thread.
//   - walk: one head read in progress, page by page newest first; one cut short
//     (cap, deadline) is resumed below where it stopped (Conversation.WalkTop,
//     WalkBottom); one read to its empty cursor covers the window
//     (Conversation.CoveredTo).
//   - watched: tracked by record key or on request (slackpoll track); watched
//     messages always rotate and get a guaranteed share of each method's calls
//     (tracking.watched_share).
//   - watermark: Message.ReplyWatermark, the latest_reply at which the reply set was
//     last read whole; a latest_reply that differs (moved either way) queues a
//     thread read.
//
// # Where things go
//
//   - A Slack method: its call on Source (source.go) with its Method name and its
//     rates in each profile (rates.go); the call in internal/slackapi and in the
//     fake, internal/slackfake; a stream in internal/poller, listed in newTick, with
//     its cap in poller.Budget.
//   - An export field: its line type and constructor in internal/export (lines.go:
//     MessageLine, NewMessageLine, …); a stored field goes on Message and in the
//     store's codec (internal/boltstore/codec_message.go).
//   - A change kind: its constant and ChangeKinds in change.go; feedTx (feed.go)
//     emits it where the Writer's transaction sees the difference.
package readmodel
