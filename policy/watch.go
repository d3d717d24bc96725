package policy

import (
	"bytes"
	"context"
	"crypto/sha256"
	"log/slog"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluicehq/sluice/intercept"
)

// WatchOptions configures a Watcher. The zero value means the defaults.
type WatchOptions struct {
	// Options are used for every compile. A nil Store is replaced by one
	// MemoryStore shared by every policy the Watcher loads, so that route
	// memory survives reloads.
	Options
	// Interval is how often Run reads the file; new content is loaded when
	// two reads in a row find it (not mid-write). Zero means one second.
	Interval time.Duration
	// OnReload, if not nil, is called after every reload attempt Run or
	// Reload makes, with the new policy or the error that kept the old
	// one. It must not block.
	OnReload func(p *Policy, err error)
}

// Watcher serves the policy in a file and reloads it when the file
// changes. A file that does not compile is rejected, the error logged, and
// the policy loaded before keeps serving. Watcher implements
// intercept.Decider and intercept.ForwardObserver by delegating to the
// current policy, and is safe for concurrent use.
type Watcher struct {
	path string
	opts WatchOptions
	cur  atomic.Pointer[Policy]

	mu      sync.Mutex // guards the fields below and serialises reloads
	modTime time.Time
	size    int64
	sum     [32]byte
	// seen is the content the last poll read, and rejected the last
	// content that failed to compile: content is reloaded once two polls
	// read the same bytes (an editor's write in progress is not served),
	// and a bad file is reported once.
	seen, rejected [32]byte
	lastErr        error
}

var (
	_ intercept.Decider         = (*Watcher)(nil)
	_ intercept.ForwardObserver = (*Watcher)(nil)
)

// NewWatcher loads the policy in path. It fails if that first load fails:
// there is no old policy to keep serving.
func NewWatcher(path string, opts WatchOptions) (*Watcher, error) {
	if opts.Store == nil {
		opts.Store = NewMemoryStore(MemoryOptions{})
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Interval <= 0 {
		opts.Interval = time.Second
	}
	w := &Watcher{path: path, opts: opts}
	w.mu.Lock()
	defer w.mu.Unlock()
	fi, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if _, err := w.load(fi); err != nil {
		return nil, err
	}
	return w, nil
}

// Policy returns the policy being served.
func (w *Watcher) Policy() *Policy { return w.cur.Load() }

// Err returns the error of the last reload, nil if it succeeded.
func (w *Watcher) Err() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.lastErr
}

// Decide implements intercept.Decider with the current policy.
func (w *Watcher) Decide(ctx context.Context, d *intercept.ActionDescriptor) (intercept.Decision, error) {
	return w.cur.Load().Decide(ctx, d)
}

// Forwarded implements intercept.ForwardObserver with the current policy.
func (w *Watcher) Forwarded(ctx context.Context, d *intercept.ActionDescriptor, dec intercept.Decision) error {
	return w.cur.Load().Forwarded(ctx, d, dec)
}

// LinkSession implements intercept.SessionLinker with the current policy.
func (w *Watcher) LinkSession(ctx context.Context, d *intercept.ActionDescriptor, session string) error {
	return w.cur.Load().LinkSession(ctx, d, session)
}

// Run checks the file every Interval until ctx is done, and reloads it
// when its modification time or size changed. It returns ctx's error.
func (w *Watcher) Run(ctx context.Context) error {
	t := time.NewTicker(w.opts.Interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
			w.poll()
		}
	}
}

func (w *Watcher) poll() {
	fi, err := os.Stat(w.path)
	w.mu.Lock()
	defer w.mu.Unlock()
	if err != nil {
		if w.lastErr == nil || w.lastErr.Error() != err.Error() { // report a missing file once
			w.reject(err)
		}
		w.modTime, w.size = time.Time{}, -1 // reload when it is back
		return
	}
	// The content decides, not the modification time and size: an edit
	// can keep both (a coarse clock, a tool restoring times).
	src, err := os.ReadFile(w.path)
	if err != nil {
		w.reject(err)
		return
	}
	sum := sha256.Sum256(src)
	switch {
	case sum == w.sum, sum == w.rejected:
		w.seen = sum
		return
	case sum != w.seen:
		w.seen = sum // changed since the last poll: perhaps mid-write; the next poll decides
		return
	}
	if w.reload(fi) != nil {
		w.rejected = sum
	}
}

// Reload reads and compiles the file now, whether or not it
// looks changed. On error the current policy keeps serving.
func (w *Watcher) Reload() error {
	fi, err := os.Stat(w.path)
	w.mu.Lock()
	defer w.mu.Unlock()
	if err != nil {
		w.reject(err)
		return err
	}
	w.sum = [32]byte{} // compile even if the bytes are the same
	return w.reload(fi)
}

func (w *Watcher) reload(fi os.FileInfo) error {
	old := w.cur.Load()
	p, err := w.load(fi)
	if err != nil {
		w.reject(err)
		return err
	}
	w.lastErr = nil
	if p != nil {
		w.opts.Logger.Info("policy: reloaded", "file", w.path, "version", p.Version())
		if fresh := newlyRemembered(old, p); len(fresh) > 0 {
			w.opts.Logger.Warn("policy: the reloaded route rules remember labels the previous policy did not; calls with them before this reload were not remembered, so these rules see only those made from now on",
				"labels", fresh)
		}
		if w.opts.OnReload != nil {
			w.opts.OnReload(p, nil)
		}
	}
	return nil
}

func (w *Watcher) reject(err error) {
	w.lastErr = err
	w.opts.Logger.Error("policy: reload rejected, the previous policy keeps serving", "file", w.path, "err", err)
	if w.opts.OnReload != nil {
		w.opts.OnReload(nil, err)
	}
}

// load reads and compiles the file and swaps it in. It returns a nil
// policy when the content is unchanged. The modification time and size
// are recorded even on error, so a bad file is reported once, not every
// Interval.
func (w *Watcher) load(fi os.FileInfo) (*Policy, error) {
	w.modTime, w.size = fi.ModTime(), fi.Size()
	src, err := os.ReadFile(w.path)
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(src)
	if bytes.Equal(sum[:], w.sum[:]) {
		return nil, nil
	}
	p, err := Compile(src, w.path, w.opts.Options)
	if err != nil {
		return nil, err
	}
	w.sum = sum
	w.cur.Store(p)
	return p, nil
}

// newlyRemembered lists, sorted, the labels p's route rules remember
// (their after sides name) that old's did not: route memory holds only
// those a rule names, so reads of these before p were not kept.
func newlyRemembered(old, p *Policy) []string {
	var fresh []string
	for l := range p.after {
		if old == nil || !old.after[l] {
			fresh = append(fresh, l)
		}
	}
	slices.Sort(fresh)
	return fresh
}
