// Package audit is Sluice's durable event store: every [telemetry.Event]
// the gateway emits, kept in an embedded SQLite database (pure Go,
// modernc.org/sqlite) in the data directory, and read back by
// `sluice events`, by replay and by the admin API.
//
// Writes go through a bounded queue to a single writer goroutine, which
// commits them in batches, one transaction per batch. When the queue is
// full, Append waits: events are never dropped to keep up. But no append
// waits for a writer whose writes fail or stall (Store.Err): an event
// that finds the queue full then is turned away (Options.OnLost), and a
// Sync append returns an error without waiting for its commit.
//
// Each batch is stored as one block: its events as JSON Lines compressed
// with S2, beside the block's seq and time ranges, a Bloom filter of its
// txn ids and the distinct agents, sessions, upstreams, tools, decisions
// and types in it, which queries use to read only the blocks that can
// match. Recording an event costs a few microseconds of CPU, most of it
// encoding the event on the caller's goroutine; see BenchmarkAppend.
//
// # What "acknowledged" means
//
// With Options.Sync, Append returns nil only after the transaction holding
// the event has committed and SQLite has fsynced the write-ahead log
// (journal_mode=WAL, synchronous=FULL). Such an event survives the process
// being killed (kill -9) and, as far as the disk honours fsync, the
// machine losing power. Concurrent callers share a commit, so the cost of
// the fsync is spread over a batch.
//
// Without Sync, Append returns once the event is in the queue. It is then
// written within one batch's time, and [Store.Close] writes everything
// queued before it returns, but an event still queued when the process is
// killed is lost. [Store.Flush] is the durability point for such callers:
// when it returns nil, everything appended before it is acknowledged in the
// Sync sense.
//
// Append, Flush and Close return an error when they could not give that
// guarantee; an event whose Append returned an error may or may not have
// been written (it was, if the error is only the context's).
//
// # When writes fail
//
// A failed write (a full disk, say) is retried a few times while writes
// have been succeeding, and once when they have not. [Store.Err] and
// Options.OnHealth say from the first failed attempt that events cannot
// be written, and that they can again once one batch is written;
// Options.OnLost is told of every event given up on. If the database file
// is removed or replaced under the store (checked every CheckInterval and
// before each batch), every later write fails with [ErrVanished]: a new
// store creates a new database.
//
// Usage:
//
//	st, err := audit.Open(filepath.Join(dataDir, audit.FileName), audit.Options{Sync: true})
//	if err != nil { ... }
//	defer st.Close()
//	err = st.Append(ctx, telemetry.PolicyEnforcement{TxnID: txn, Tool: "search", Decision: "allow", Reason: "tool_allowed"}.Event())
//
//	evs, err := st.Query(ctx, audit.Filter{Agent: "claude-code", Decision: "deny", Limit: 100})
package audit
