// Package poller is slackpoll's scheduler: it keeps a readmodel.Store current from a
// readmodel.Source, one bounded tick at a time, spending each Slack method's calls
// where they fix the most staleness. It decides what to read and when; what a read
// means for the model is the domain's (readmodel.Writer). The words it uses (tick,
// stream, head, walk, tail range, tile, anchor, locate, placeholder, …) are defined
// in internal/readmodel's package documentation.
//
// # Shape
//
//	Poller        Run and Tick; holds the memory and builds a tick at a time
//	memory        what is remembered from one tick to the next (memory.go)
//	tick          one pass: setup, then its streams at once; finish writes the summary
//	setup         the calls made in turn before the streams: auth.test,
//	              users.conversations, conversations.info, the watched set
//	stream        one per Slack method the budget caps, each owning its state:
//	  historyStream    conversations.history: heads (bulk window walks, walk.go)
//	                   and tailRanges (tiles), both paged by one pager (pager.go)
//	  repliesStream    conversations.replies: queued threads, locate, the thread
//	                   rotation
//	  usersStream      users.info
//	  reactionsStream  reactions.get
//	workQueue     what streams hand each other (threads, messages to locate, users)
//	              and how one with nothing to do waits for it (idle)
//	eligible      the conversations the tick may read
//	report        the tick's summary as it is built
//	tick.do       the seam: every Slack call goes through it, and its outcome
//	              (done, stopped, fatal, gone, failed, skipped) is what the caller
//	              switches on; a conversation's failure and a skipped call are
//	              already recorded when it returns
//	estimator     the staleness the tick reports, from the last ticks' throughput
//
// A new Slack method the tick spends calls on is a new stream: a type with gate,
// enabled, run and tally, listed in newTick, with its cap in Budget.
//
// Concurrency: the streams of a tick run at once. Each one's own state is touched by
// its goroutine alone; what two share is behind workQueue, eligible, report or
// backoffs, each with its own lock. Tick is not safe for concurrent use.
package poller
