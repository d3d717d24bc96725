package audit

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluicehq/sluice/internal/privatefile"
	"github.com/sluicehq/sluice/telemetry"
)

// FileName is the event database's name in the data directory.
const FileName = "events.db"

// Defaults of [Options].
const (
	DefaultQueueSize     = 10_000
	DefaultBatchSize     = 1_000
	DefaultLinger        = 50 * time.Millisecond
	DefaultPollInterval  = 250 * time.Millisecond
	DefaultPruneInterval = time.Hour
	DefaultCheckInterval = 2 * time.Second
	DefaultStallAfter    = time.Second
)

var (
	// ErrClosed is returned by a Store's methods after Close.
	ErrClosed = errors.New("audit: store is closed")
	// ErrReadOnly is returned by Append and Flush on a store opened with
	// Options.ReadOnly.
	ErrReadOnly = errors.New("audit: store is read-only")
	// ErrVanished is the error of every write after the database file was
	// removed or replaced under an open store (the data directory deleted,
	// say). SQLite would go on writing into the deleted file, so the
	// store writes nothing more; a new store (a restart) creates a new
	// database.
	ErrVanished = errors.New("audit: the event database was removed or replaced while open; restart to create a new one")
)

// A DepthRecorder is told the queue depth after every batch;
// telemetry.Metrics is one.
type DepthRecorder interface {
	QueueDepth(n int)
}

// Options configures a [Store]. The zero value is a writable store with
// the defaults below, acknowledging appends on enqueue.
type Options struct {
	// QueueSize bounds the events waiting to be written; zero means
	// DefaultQueueSize. When the queue is full, Append waits, unless
	// writes are failing (Err): then the event is turned away at once and
	// counted lost (OnLost), as the writer it would wait for is stuck.
	QueueSize int
	// BatchSize is the most events committed in one transaction, which
	// become one stored block; zero means DefaultBatchSize.
	BatchSize int
	// Linger is how long the writer waits for more events before
	// committing a batch nobody waits on (group commit); zero means
	// DefaultLinger, negative commits at once. Appends never wait for it:
	// only Sync appends and Flush wait for a commit, and they end the
	// linger.
	Linger time.Duration
	// Sync makes Append return only after the event is committed and
	// fsynced (see the package documentation).
	Sync bool
	// ReadOnly opens an existing database for reading only, for the CLI
	// and replay while a gateway may be writing it. No writer is started.
	ReadOnly bool
	// Now stamps events whose Time is zero; nil means time.Now.
	Now func() time.Time
	// PollInterval is how often Tail looks for events written by another
	// process; zero means DefaultPollInterval. Events written through
	// this Store wake Tail at once.
	PollInterval time.Duration
	// Depth receives the queue depth; nil means nobody.
	Depth DepthRecorder
	// Retention, if positive, is how long events are kept: when the store
	// opens and every PruneInterval after, the writer deletes the blocks
	// whose events are all older than that (the newest block is always
	// kept, so seq never goes back). Zero keeps everything.
	Retention time.Duration
	// PruneInterval is how often Retention is applied; zero means
	// DefaultPruneInterval.
	PruneInterval time.Duration
	// OnPrune, if set, is told what each pruning deleted, or why it
	// failed. It runs on the writer goroutine and must not call the Store.
	OnPrune func(events int64, err error)
	// OnHealth, if set, is told when writing starts to fail, with the
	// error of the first failed attempt (before any retry) or of a write
	// that stalls (StallAfter), and when a write succeeds again, with nil;
	// [Store.Err] says the same at any time. It runs on the writer
	// goroutine, or a timer's for a stall, one call (of it and OnLost) at
	// a time, and must not call the Store.
	OnHealth func(err error)
	// OnLost, if set, is told of every batch of events given up on: how
	// many events were not written (acknowledged or not) and why. It runs
	// on the writer goroutine (or, for an event turned away from a full
	// queue, the appender's), one call at a time, and must not call the
	// Store.
	OnLost func(events int, err error)
	// StallAfter is how long one attempt to write (or one transaction of
	// a Retention prune, or a check of the file) may go on before the
	// store counts as failing (Err, OnHealth) until a write succeeds: a
	// database another process holds locked makes every attempt wait out
	// SQLite's busy timeout (10 s), a stalled disk for ever, and until then
	// nothing said so (calls went on under audit.on_failure: deny). Zero
	// means DefaultStallAfter, negative never.
	StallAfter time.Duration
	// CheckInterval is how often the writer makes sure the database file
	// is still the one it opened, while idle; every batch checks too.
	// Zero means DefaultCheckInterval, negative checks only at batches.
	CheckInterval time.Duration

	// stat, if set, replaces os.Stat in the check of the database file;
	// tests use it to stall the check as a hung file system would.
	stat func(string) (os.FileInfo, error)
	// beforeWrite, if set, runs in the writer before each batch; tests
	// use it to hold the writer.
	beforeWrite func()
}

// Store is the event store. Its methods are safe for concurrent use.
type Store struct {
	path     string
	db       *sql.DB
	readOnly bool
	sync     bool
	batch    int
	linger   time.Duration
	poll     time.Duration
	now      func() time.Time
	depth    DepthRecorder
	hook     func()
	stat     func(string) (os.FileInfo, error)

	retention     time.Duration
	pruneInterval time.Duration
	onPrune       func(int64, error)
	onHealth      func(error)
	onLost        func(int, error)
	checkInterval time.Duration
	stallAfter    time.Duration
	file          os.FileInfo // the database file as opened, to notice it vanish

	// The writer's own connection; nil when read-only.
	wconn   *sql.Conn
	scratch scratch              // the writer's
	stmts   map[string]*sql.Stmt // the writer's prepared statements, by SQL
	queue   chan *request
	wake    chan struct{} // ends the writer's linger; buffered, one
	wakeAt  int           // queue length at which an Append pokes wake
	waiters atomic.Int64  // queued requests someone waits on: no lingering while there are any
	closing atomic.Bool   // set by Close: no lingering either
	giveUp  atomic.Bool   // set by Shutdown past its deadline: what is queued is not written
	done    chan struct{} // closed when the writer has exited

	vanished    error                 // the writer's: set for good once the file is gone
	unavailable atomic.Pointer[error] // failing, for Err
	// failed is closed while writes fail, and replaced by an open one
	// when one succeeds: appenders waiting for the writer stop waiting.
	failed atomic.Pointer[chan struct{}]

	healthMu sync.Mutex // guards the fields below, and calls of onHealth and onLost
	failing  error      // why the last write failed or why the one in progress stalls, nil if it succeeded
	attempt  uint64     // counts write attempts begun and ended, for the stall watchdog
	// stalledAt is the attempt whose stall made the store failing last.
	stalledAt uint64

	mu     sync.RWMutex // guards closed; held for reading while sending on queue, so Close never closes it under a sender
	closed bool

	notifyMu sync.Mutex    // guards notify
	notify   chan struct{} // closed and replaced after every commit

	failMu  sync.Mutex // guards the fields below
	lost    int64      // unsynced events that could not be written
	lastErr error
}

// request is one queued append, or a flush marker (ack set, no event).
type request struct {
	ev    pending
	flush bool
	// ack receives the commit's outcome; nil for appends nobody waits
	// for. Buffered so the writer never blocks on it.
	ack chan error
}

// Open opens or creates the event database at path, creating its
// directory, and with Options.ReadOnly unset starts the writer. Close
// must be called to write what is queued and release the database.
func Open(path string, opts Options) (*Store, error) {
	s := &Store{
		path:     path,
		readOnly: opts.ReadOnly,
		sync:     opts.Sync,
		batch:    opts.BatchSize,
		poll:     opts.PollInterval,
		now:      opts.Now,
		depth:    opts.Depth,
		hook:     opts.beforeWrite,
		stat:     opts.stat,

		retention:     opts.Retention,
		pruneInterval: opts.PruneInterval,
		onPrune:       opts.OnPrune,
		onHealth:      opts.OnHealth,
		onLost:        opts.OnLost,
		checkInterval: opts.CheckInterval,
		stallAfter:    opts.StallAfter,
		notify:        make(chan struct{}),
	}
	healthy := make(chan struct{})
	s.failed.Store(&healthy)
	if s.stat == nil {
		s.stat = os.Stat
	}
	if s.checkInterval == 0 {
		s.checkInterval = DefaultCheckInterval
	}
	if s.stallAfter == 0 {
		s.stallAfter = DefaultStallAfter
	}
	s.linger = opts.Linger
	if s.linger == 0 {
		s.linger = DefaultLinger
	}
	if s.batch <= 0 {
		s.batch = DefaultBatchSize
	}
	if s.poll <= 0 {
		s.poll = DefaultPollInterval
	}
	if s.pruneInterval <= 0 {
		s.pruneInterval = DefaultPruneInterval
	}
	if s.now == nil {
		s.now = time.Now
	}
	queue := opts.QueueSize
	if queue <= 0 {
		queue = DefaultQueueSize
	}

	if opts.ReadOnly {
		if _, err := os.Stat(path); err != nil {
			return nil, fmt.Errorf("audit: no event database at %s: %w", path, err)
		}
	} else if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("audit: creating data directory: %w", err)
	} else if err := privatefile.Prepare(path); err != nil {
		return nil, fmt.Errorf("audit: %w", err)
	}
	dsn, err := dsn(path, opts.ReadOnly, opts.Sync)
	if err != nil {
		return nil, err
	}
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("audit: opening %s: %w", path, err)
	}
	s.db = db
	ctx := context.Background()
	if err := migrate(ctx, db, opts.ReadOnly); err != nil {
		db.Close()
		return nil, fmt.Errorf("audit: %s: %w", path, err)
	}
	if opts.ReadOnly {
		return s, nil
	}
	if s.wconn, err = db.Conn(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("audit: %s: %w", path, err)
	}
	if s.file, err = os.Stat(path); err != nil {
		s.wconn.Close()
		db.Close()
		return nil, fmt.Errorf("audit: %w", err)
	}
	s.queue = make(chan *request, queue)
	s.wake = make(chan struct{}, 1)
	s.wakeAt = min(s.batch, queue/2+1)
	s.done = make(chan struct{})
	go s.run()
	return s, nil
}

// Path returns the database file's path.
func (s *Store) Path() string { return s.path }

// Err returns why events cannot be written now: nil while the last write
// succeeded (and for a read-only store), the error of the last failed
// write (a full disk, say) while writes fail, and an error wrapping
// [ErrVanished] for good once the database file was removed or replaced.
// A failing store recovers by itself when a write succeeds again; writes
// go on being tried as events come.
func (s *Store) Err() error {
	if p := s.unavailable.Load(); p != nil {
		return *p
	}
	return nil
}

// Append adds e to the store. A zero e.Time is stamped with the store's
// clock and an empty e.ID gets a new one. It waits while the queue is
// full and, with Options.Sync, until the event is committed; ctx bounds
// both waits, and so do failing writes (Err): a write that fails or
// stalls ends them with an error, the event counted lost if it found no
// room. See the package documentation for what a nil error promises.
func (s *Store) Append(ctx context.Context, e telemetry.Event) error {
	if s.readOnly {
		return ErrReadOnly
	}
	p, err := s.encode(e, nil)
	if err != nil {
		return err
	}
	return s.appendEncoded(ctx, p)
}

// AppendRecord is Append of r's event, encoded by r without building its
// Attrs map: the way to record the events of every call.
func (s *Store) AppendRecord(ctx context.Context, r telemetry.Record) error {
	if s.readOnly {
		return ErrReadOnly
	}
	p, err := s.encode(r.Header(), r)
	if err != nil {
		return err
	}
	return s.appendEncoded(ctx, p)
}

func (s *Store) appendEncoded(ctx context.Context, p pending) error {
	req := &request{ev: p}
	if s.sync {
		req.ack = make(chan error, 1)
	}
	if err := s.enqueue(ctx, req); err != nil {
		return err
	}
	return s.wait(ctx, req, true)
}

// Flush waits until every event appended before it is committed (and,
// with Options.Sync, fsynced). It returns an error if one of them could
// not be written.
func (s *Store) Flush(ctx context.Context) error {
	if s.readOnly {
		return ErrReadOnly
	}
	req := &request{flush: true, ack: make(chan error, 1)}
	if err := s.enqueue(ctx, req); err != nil {
		return err
	}
	return s.wait(ctx, req, false)
}

// wait waits for req's acknowledgement, if it has one, until ctx ends or,
// with whileFailing set, writes fail: an append then returns at once,
// its event left queued (the writer's next attempt may still write it),
// rather than wait out a locked database's busy timeout or a stalled
// disk.
func (s *Store) wait(ctx context.Context, req *request, whileFailing bool) error {
	if req.ack == nil {
		return nil
	}
	var failed <-chan struct{}
	if whileFailing {
		failed = *s.failed.Load()
	}
	select {
	case err := <-req.ack:
		return err
	case <-ctx.Done():
		return fmt.Errorf("audit: waiting for commit: %w", ctx.Err())
	case <-failed:
		return fmt.Errorf("audit: not committed, events cannot be written now: %w", s.errOr(ErrUnavailable))
	}
}

// ErrUnavailable is the error of an append turned away, or not waited
// for, while writes fail, when the failure itself is not known.
var ErrUnavailable = errors.New("audit: events cannot be written now")

// errOr returns Err, or err if it is nil.
func (s *Store) errOr(err error) error {
	if e := s.Err(); e != nil {
		return e
	}
	return err
}

func (s *Store) enqueue(ctx context.Context, req *request) error {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return ErrClosed
	}
	if req.ack != nil {
		s.waiters.Add(1)
	}
	select {
	case s.queue <- req:
	default:
		// Full: wait for the writer rather than drop anything, while it
		// writes. A writer whose writes fail or stall is not waited for:
		// a locked database held each call for a busy timeout (10 s) per
		// thousand events queued, a stalled disk for ever, whatever
		// audit.on_failure said.
		s.poke()
		select {
		case s.queue <- req:
		case <-ctx.Done():
			if req.ack != nil {
				s.waiters.Add(-1)
			}
			return fmt.Errorf("audit: waiting for room in the queue: %w", ctx.Err())
		case <-*s.failed.Load():
			if req.ack != nil {
				s.waiters.Add(-1)
			}
			err := fmt.Errorf("audit: the queue is full and events cannot be written now: %w", s.errOr(ErrUnavailable))
			if !req.flush {
				req.ev.release()
				s.turnedAway(err)
			}
			return err
		}
	}
	if req.ack != nil || len(s.queue) >= s.wakeAt {
		s.poke()
	}
	return nil
}

// took is the writer taking r off the queue.
func (s *Store) took(r *request) {
	if r != nil && r.ack != nil {
		s.waiters.Add(-1)
	}
}

// poke ends the writer's linger.
func (s *Store) poke() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// run is the writer: it takes what is queued, up to a batch, commits it
// in one transaction and acknowledges it, until the queue is closed and
// empty.
func (s *Store) run() {
	defer close(s.done)
	batch := make([]*request, 0, s.batch)
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	var prune <-chan time.Time
	if s.retention > 0 {
		s.prune()
		t := time.NewTicker(s.pruneInterval)
		defer t.Stop()
		prune = t.C
	}
	var check <-chan time.Time
	if s.checkInterval > 0 {
		t := time.NewTicker(s.checkInterval)
		defer t.Stop()
		check = t.C
	}
	var failed error // a failure of unsynced events not yet reported by a Flush
	for {
		var req *request
		var ok bool
		select {
		case req, ok = <-s.queue:
		case <-prune:
			s.prune()
			continue
		case <-check:
			if err := s.watchedCheckFile(); err != nil {
				s.report(err)
			}
			continue
		}
		if !ok {
			return
		}
		batch = append(batch[:0], req)
		// Group commit: while nobody waits for an acknowledgement, linger
		// for more events, so a trickle of calls does not cost a
		// transaction (and an fsync) each. The writer sleeps through the
		// linger rather than waking for every event; an Append that must
		// be acknowledged, a filling queue and Close cut it short.
		s.took(req)
		// A poke left from a batch that was already being written when
		// it came is stale; one that comes from now on is for this batch.
		select {
		case <-s.wake:
		default:
		}
		if req.ack == nil && s.waiters.Load() == 0 && !s.closing.Load() && s.linger > 0 && len(s.queue) < s.wakeAt {
			timer.Reset(s.linger)
			select {
			case <-s.wake:
			case <-timer.C:
			}
			timer.Stop()
		}
		size := req.ev.size()
		open := true
	fill:
		for len(batch) < s.batch && size < maxBlockBytes {
			select {
			case r, ok := <-s.queue:
				if !ok {
					open = false
					break fill
				}
				s.took(r)
				batch = append(batch, r)
				size += r.ev.size()
			default:
				break fill
			}
		}
		if s.hook != nil {
			s.hook()
		}
		var err error
		if s.giveUp.Load() {
			for _, r := range batch {
				r.ev.release()
			}
			err = errGivenUp
		} else {
			err = s.write(batch)
		}
		if err != nil {
			s.recordFailure(batch, err)
			failed = err
		}
		// Report the depth before acknowledging, so a caller whose Flush
		// returned sees the depth as of its commit.
		if s.depth != nil {
			s.depth.QueueDepth(len(s.queue))
		}
		for _, r := range batch {
			switch {
			case r.flush:
				r.ack <- errors.Join(err, failed)
				failed = nil
			case r.ack != nil:
				r.ack <- err
			}
		}
		clear(batch) // let the GC have the rows
		s.notifyMu.Lock()
		close(s.notify)
		s.notify = make(chan struct{})
		s.notifyMu.Unlock()
		if !open {
			return
		}
	}
}

// write writes a batch as one block, trying a few times while writes
// have been succeeding: SQLITE_BUSY past the busy timeout (another process
// holding the write lock) and a full disk can both pass. A retry after an
// attempt that committed despite its error does not store the block twice.
// The first failed attempt is reported at once (Err, OnHealth); once
// failing, a batch gets one attempt, so that callers waiting on it hear of
// the failure without delay and the first success ends it.
func (s *Store) write(batch []*request) error {
	if err := s.watchedCheckFile(); err != nil {
		for _, req := range batch {
			req.ev.release()
		}
		s.report(err)
		return err
	}
	evs := make([]*pending, 0, len(batch))
	for _, req := range batch {
		if !req.flush {
			evs = append(evs, &req.ev)
		}
	}
	if len(evs) == 0 {
		return nil
	}
	b := newBlock(evs, &s.scratch)
	for _, p := range evs {
		p.release()
	}
	var err error
	var prev int64
	attempts := 4
	s.healthMu.Lock()
	if s.failing != nil {
		attempts = 1
	}
	s.healthMu.Unlock()
	for i, backoff := 0, 10*time.Millisecond; i < attempts; i, backoff = i+1, backoff*5 {
		stop := s.watch()
		err = s.writeBlock(&b, prev)
		stop()
		if err == nil {
			s.report(nil)
			return nil
		}
		s.report(err)
		prev = b.first // zero if the attempt failed before choosing its seq
		if s.giveUp.Load() {
			break
		}
		if i < attempts-1 {
			time.Sleep(backoff)
		}
	}
	return err
}

// checkFile reports an error wrapping ErrVanished if the database file is
// no longer at its path, or another file is. Only the writer calls it.
func (s *Store) checkFile() error {
	if s.vanished != nil {
		return s.vanished
	}
	fi, err := s.stat(s.path)
	switch {
	case errors.Is(err, os.ErrNotExist) || err == nil && !os.SameFile(fi, s.file):
		s.vanished = fmt.Errorf("%w (%s)", ErrVanished, s.path)
		return s.vanished
	case err != nil:
		// Cannot tell (a permission change, say): the write will.
		return nil
	}
	return nil
}

// watchedCheckFile is checkFile under the stall watchdog: a Stat on a
// file system that stalls (a hung NFS mount) holds the writer as a write
// does.
func (s *Store) watchedCheckFile() error {
	stop := s.watch()
	err := s.checkFile()
	if stalled := stop(); stalled && err == nil {
		// The store was writing before the check stalled it, and the
		// file is still there: an idle store is available again
		// without waiting for an event to say so.
		s.report(nil)
	}
	return err
}

// watch starts the stall watchdog of one write attempt (or of anything
// else that holds the writer on the database: a prune, a check); the
// function it returns ends it, before the attempt's outcome is reported,
// and says whether the watchdog found it stalled and made the store
// failing.
func (s *Store) watch() (stop func() (stalled bool)) {
	if s.stallAfter <= 0 {
		return func() bool { return false }
	}
	s.healthMu.Lock()
	s.attempt++
	n := s.attempt
	s.healthMu.Unlock()
	t := time.AfterFunc(s.stallAfter, func() { s.stalled(n) })
	return func() bool {
		t.Stop()
		s.healthMu.Lock()
		defer s.healthMu.Unlock()
		s.attempt++ // a watchdog already firing finds its attempt over
		return s.stalledAt == n && s.failing != nil
	}
}

// stalled reports write attempt n as failing if it is still going on.
func (s *Store) stalled(n uint64) {
	s.healthMu.Lock()
	defer s.healthMu.Unlock()
	if s.attempt != n || s.failing != nil {
		return
	}
	s.stalledAt = n
	s.setFailing(fmt.Errorf("audit: a write has not finished in %s: the event database is locked by another process, or its disk stalls", s.stallAfter))
}

// report records the outcome of a write, nil for success, for Err and
// OnHealth. Only the writer calls it.
func (s *Store) report(err error) {
	if s.vanished != nil {
		err = s.vanished
	}
	s.healthMu.Lock()
	defer s.healthMu.Unlock()
	s.setFailing(err)
}

// setFailing records why writes fail (nil: they succeed); s.healthMu is
// held.
func (s *Store) setFailing(err error) {
	was := s.failing
	s.failing = err
	if err == nil {
		s.unavailable.Store(nil)
	} else {
		s.unavailable.Store(&err)
	}
	switch {
	case was == nil && err != nil:
		close(*s.failed.Load())
	case was != nil && err == nil:
		healthy := make(chan struct{})
		s.failed.Store(&healthy)
	}
	if (was == nil) != (err == nil) && s.onHealth != nil {
		s.onHealth(err)
	}
}

// turnedAway tells OnLost of an event Append found no room for while
// writes fail (its caller has the error: Close does not count it).
func (s *Store) turnedAway(err error) {
	if s.onLost != nil {
		s.healthMu.Lock()
		s.onLost(1, err)
		s.healthMu.Unlock()
	}
}

func (s *Store) recordFailure(batch []*request, err error) {
	var n int64 // acknowledged on enqueue: told only by Close
	all := 0
	for _, r := range batch {
		if !r.flush {
			all++
			if r.ack == nil {
				n++
			}
		}
	}
	if all > 0 && s.onLost != nil {
		s.healthMu.Lock()
		s.onLost(all, err)
		s.healthMu.Unlock()
	}
	s.failMu.Lock()
	s.lost += n
	s.lastErr = err
	s.failMu.Unlock()
}

// errGivenUp is the loss of the events still queued when Shutdown's
// deadline passed.
var errGivenUp = errors.New("audit: given up at shutdown: the event database did not take them in time")

// Close stops accepting events, writes everything already queued, and
// closes the database. Appends blocked on a full queue when Close is
// called are written too. It returns an error if any event acknowledged
// on enqueue could not be written during the store's life. It is
// Shutdown without a deadline: a database another process holds locked
// keeps it for SQLite's busy timeout (10 s) per batch, and a disk that
// stalls for ever.
func (s *Store) Close() error { return s.Shutdown(context.Background()) }

// Shutdown is Close within ctx: once ctx ends, the events still queued
// are given up (Options.OnLost is told of them as the writer drops them),
// and Shutdown returns an error saying so without waiting for the write
// under way, which cannot be interrupted; the writer closes the database
// once that write returns. A process stopping within a deadline (sluice
// serve's shutdown_timeout) uses it.
func (s *Store) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return ErrClosed
	}
	s.closed = true
	if s.queue != nil {
		s.closing.Store(true)
		close(s.queue)
		s.poke()
	}
	s.mu.Unlock()

	if s.readOnly {
		return s.db.Close()
	}
	closed := make(chan error, 1)
	go func() {
		<-s.done
		closed <- s.closeWriter()
	}()
	select {
	case err := <-closed:
		return err
	case <-ctx.Done():
	}
	s.giveUp.Store(true)
	queued := len(s.queue)
	why := s.Err()
	if why == nil {
		why = ctx.Err()
	}
	return fmt.Errorf("audit: the event database did not take the last events before the shutdown deadline: %d queued events are given up, and the write under way may not end: %w", queued, why)
}

// closeWriter releases the writer's connection and the database once the
// writer has exited, and returns the store's error.
func (s *Store) closeWriter() error {
	var errs []error
	for _, st := range s.stmts {
		errs = append(errs, st.Close())
	}
	if !s.giveUp.Load() {
		// Fold the WAL back into the database so the directory holds
		// one file when the gateway is down.
		if _, err := s.wconn.ExecContext(context.Background(), "PRAGMA wal_checkpoint(TRUNCATE)"); err != nil {
			errs = append(errs, fmt.Errorf("audit: checkpoint: %w", err))
		}
	}
	errs = append(errs, s.wconn.Close())
	errs = append(errs, s.db.Close())
	s.failMu.Lock()
	if s.lost > 0 {
		errs = append(errs, fmt.Errorf("audit: %d events could not be written: %w", s.lost, s.lastErr))
	}
	s.failMu.Unlock()
	return errors.Join(errs...)
}

// changed returns a channel closed at the next commit by this store.
func (s *Store) changed() <-chan struct{} {
	s.notifyMu.Lock()
	defer s.notifyMu.Unlock()
	return s.notify
}
