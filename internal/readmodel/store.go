package readmodel

import (
	"errors"
	"time"
)

// ErrStopIteration may be returned by a ForEach callback to end the walk early without
// an error.
var ErrStopIteration = errors.New("stop iteration")

// Store is the persistent read model. All writes happen inside Update, in one
// transaction: either everything fn wrote is committed, or (fn returned an error, or the
// process died) nothing is. That is what rule 3 of replace-on-read rests on.
// Implementations: internal/bolt (bbolt), and an in-memory one in tests.
type Store interface {
	// View runs fn in a read-only transaction. Values returned by Tx methods are copies
	// and stay valid after fn returns.
	View(fn func(Tx) error) error
	// Update runs fn in a read-write transaction and commits it if fn returns nil.
	Update(fn func(Tx) error) error
	// Close releases the store (and, for bbolt, its file lock).
	Close() error
}

// Tx is one store transaction. Read methods return (zero, false, nil) for a missing
// item; errors are storage or decoding failures only. Write methods fail with an error
// on a read-only transaction.
type Tx interface {
	// Conversation returns the stored conversation with that ID.
	Conversation(id string) (Conversation, bool, error)
	// Conversations calls fn for every stored conversation, by ID ascending.
	Conversations(fn func(Conversation) error) error
	// PutConversation replaces the stored conversation with c.
	PutConversation(c Conversation) error

	// Message returns the record of (channel, ts): a timeline message or a reply.
	Message(channel string, ts TS) (Message, bool, error)
	// PutMessage replaces the record of (m.Channel, m.TS) with m. It keeps the derived
	// indexes current: the thread index (a reply is listed under its ThreadTS) and, for
	// tracked messages (m.IsTracked()), the tail index ordered by m.RotatedAt() with
	// never (nil) first. m.TS must be valid. After an error the transaction must be
	// rolled back (return the error from the Update callback).
	PutMessage(m Message) error
	// DeleteMessage removes the record of (channel, ts) and its index entries; deleting
	// a missing record is not an error.
	DeleteMessage(channel string, ts TS) error
	// Replies returns the replies stored under the thread whose parent is (channel,
	// threadTS), ascending by ts, without the parent.
	Replies(channel string, threadTS TS) ([]Message, error)
	// Timeline calls fn for every timeline message (m.InTimeline()) of the channel with
	// oldest <= ts <= latest, ascending by ts. "" for oldest or latest leaves that end
	// open. Returning ErrStopIteration ends the walk with a nil error.
	Timeline(channel string, oldest, latest TS, fn func(Message) error) error
	// TimelineBefore returns up to n timeline messages of the channel with ts < latest,
	// newest first. Use it in View transactions.
	TimelineBefore(channel string, latest TS, n int) ([]Message, error)
	// TimelineTile returns the tile of the channel's timeline that holds ts: the
	// timeline messages numbered from the channel's oldest stored one (0) are cut into
	// tiles of size, tile k holding numbers k×size to k×size+size−1. It returns the
	// zero Tile when ts is not a stored timeline message. Its cost grows with the
	// number of records below ts, not with size.
	TimelineTile(channel string, ts TS, size int) (Tile, error)
	// TailOldest returns up to n tracked messages least recently rotated first (by
	// RotatedAt, never first; ties by channel then ts), skipping those for which skip returns
	// true. Its cost grows with n and the skipped entries, not with the store size.
	TailOldest(n int, skip func(TailEntry) bool) ([]TailEntry, error)
	// TailAfter is TailOldest from the first entry whose RotatedAt is after at: the
	// entries read later than at (in the future, when at is now), least recently
	// rotated first. Its cost is TailOldest's.
	TailAfter(at time.Time, n int, skip func(TailEntry) bool) ([]TailEntry, error)
	// Counts returns, for one channel, the number of stored message records, of thread
	// parents with a stored reply set, and of tracked messages.
	Counts(channel string) (ChannelCounts, error)

	// User returns the cached users.info answer for id.
	User(id string) (User, bool, error)
	// Users calls fn for every cached user, by ID ascending.
	Users(fn func(User) error) error
	// PutUser replaces the cached user u.ID.
	PutUser(u User) error

	// Record returns the message a record key is attached to.
	Record(key string) (Ref, bool, error)
	// PutRecord attaches a record key to a message.
	PutRecord(key string, ref Ref) error
	// DeleteRecord detaches a record key (no error when it is not attached).
	DeleteRecord(key string) error

	// Watched calls fn for every watched message (record-keyed, or tracked on
	// request), by channel then ts. Returning ErrStopIteration ends the walk.
	Watched(fn func(Ref) error) error
	// IsWatched reports whether ref is watched.
	IsWatched(ref Ref) (bool, error)
	// PutWatched adds ref to the watched set; DeleteWatched removes it (no error when
	// it is absent).
	PutWatched(ref Ref) error
	DeleteWatched(ref Ref) error

	// Identity returns the cached auth.test answer.
	Identity() (Identity, bool, error)
	// PutIdentity replaces the cached auth.test answer.
	PutIdentity(id Identity) error
	// MethodState returns the persisted pacing state of one Slack method.
	MethodState(method string) (MethodState, bool, error)
	// PutMethodState replaces the pacing state of one Slack method.
	PutMethodState(method string, s MethodState) error
	// LastTick returns the summary of the last finished tick.
	LastTick() (TickSummary, bool, error)
	// PutLastTick replaces the summary of the last finished tick.
	PutLastTick(s TickSummary) error

	// AppendChange assigns c.Seq, the feed's next sequence number (never reused, even
	// after the change is deleted), and stores c.
	AppendChange(c *Change) error
	// Changes calls fn for every stored change with Seq > after, by seq ascending.
	// Returning ErrStopIteration ends the walk.
	Changes(after uint64, fn func(Change) error) error
	// ChangeBounds returns the seq of the oldest change still stored (0 when none is)
	// and the last seq assigned (0 before the first).
	ChangeBounds() (oldest, last uint64, err error)
	// DeleteChange removes one change (retention); an absent one is not an error.
	DeleteChange(seq uint64) error
	// FeedRestores lists the times the feed was found older than the seqs it had
	// handed out (a restore), oldest first.
	FeedRestores() ([]FeedRestore, error)

	OutboxTx

	// Undecodable lists the stored records reads have found undecodable since the
	// store was opened ("message C1/1700000000.000100: <error>"), sorted. Reads skip
	// them, as absent; a committed write of one removes it from the list.
	Undecodable() []string
}

// OutboxTx is the webhooks' outbox part of a Tx. The store keeps, per webhook, its
// rows' counts and an index of its pending (not parked) rows by conversation, so
// that neither a claim nor the figures of status read the whole outbox: a receiver
// down for a day leaves hundreds of thousands of rows.
type OutboxTx interface {
	// PutOutbox replaces the outbox row (r.Webhook, r.Seq).
	PutOutbox(r OutboxRow) error
	// Outbox calls fn for every outbox row of webhook, by seq ascending; "" walks every
	// webhook's rows, by webhook name then seq. Returning ErrStopIteration ends the walk.
	Outbox(webhook string, fn func(OutboxRow) error) error
	// OutboxRow returns the row (webhook, seq).
	OutboxRow(webhook string, seq uint64) (OutboxRow, bool, error)
	// DeleteOutbox removes a row; an absent one is not an error.
	DeleteOutbox(webhook string, seq uint64) error
	// OutboxHeads calls fn for each conversation with pending rows of webhook, with
	// the index entry of its first pending row (the lowest seq), by channel. Its cost
	// grows with the conversations, not the rows.
	OutboxHeads(webhook string, fn func(OutboxEntry) error) error
	// OutboxPending calls fn with the index entries of the pending rows of one
	// conversation of webhook, by seq ascending, without reading the rows.
	// Returning ErrStopIteration ends the walk.
	OutboxPending(webhook, channel string, fn func(OutboxEntry) error) error
	// OutboxParked calls fn for the parked rows of webhook, by seq ascending.
	// Returning ErrStopIteration ends the walk.
	OutboxParked(webhook string, fn func(OutboxRow) error) error
	// OutboxCounts calls fn with the counts of every webhook that has a bucket in the
	// outbox (rows now, or rows dropped before), by name.
	OutboxCounts(fn func(webhook string, c OutboxCounts) error) error
	// TrimOutbox deletes webhook's oldest rows (by seq, parked or not, claimed or
	// not) while it holds more than maxRows, counts them as dropped, and returns
	// what it dropped.
	TrimOutbox(webhook string, maxRows int) (OutboxDrop, error)
}

// OutboxEntry is the index entry of a pending outbox row. A conversation's first (its
// head) is the row whose delivery holds back the conversation's later ones.
type OutboxEntry struct {
	Channel string
	Seq     uint64
	// DueAt is the row's DueAt; Enqueued when it was written.
	DueAt, Enqueued time.Time
}

// OutboxCounts are one webhook's outbox counts.
type OutboxCounts struct {
	Pending, Parked int
	// Dropped is how many rows TrimOutbox deleted undelivered, ever (of this store);
	// LastDropped the seq of the last of them.
	Dropped     uint64
	LastDropped uint64
}

// OutboxDrop is what one TrimOutbox dropped: N rows, seqs First to Last.
type OutboxDrop struct {
	N           int
	First, Last uint64
}

// TailEntry is one entry of the tail index: a tracked message and its RotatedAt (nil:
// never read, or a thread never read whole), in UTC.
type TailEntry struct {
	Ref
	RotatedAt *time.Time
}

// Tile is one tile of a conversation's timeline (Tx.TimelineTile).
type Tile struct {
	// Messages are the tile's messages, ascending by ts; a stored record that cannot
	// be decoded keeps its number but is not among them.
	Messages []Message
	// Oldest and Latest are the ts of the tile's first and last numbered records,
	// decodable or not: a range over the tile must cover those it could not decode,
	// or no read would ever replace them.
	Oldest, Latest TS
}

// ChannelCounts are per-conversation totals for status.
type ChannelCounts struct {
	Messages int `json:"messages"`
	Threads  int `json:"threads"`
	Tracked  int `json:"tracked"`
}
