package classifier

import "sync"

// MaxScreeningBytes bounds the bytes of results DetectInjectionInResult
// reads at once, across every caller. Reading a result costs several
// times its size while it lasts (the walk's copy, a blob decoded, a run
// of blocks joined: about 3.5 times at most, a 32 MiB result ~110 MiB
// more), so many large results screened together (a malicious upstream's,
// or many agents asking for large results at once) would hold that many
// times over. A result that does not fit waits for others to be read,
// never passed on unread; one larger than the bound is read alone. A
// result of at most smallResult bytes (most are) does not wait: counted,
// so that large ones wait for it, it is not held up behind an upstream's
// flood of large ones. The memory screening holds beyond the results
// themselves is so about 3.5 × 64 MiB (~225 MiB), and 3.5 × 256 KiB more
// for each small result read at the time.
const MaxScreeningBytes = 64 << 20

// smallResult is the size of a result read without waiting for room.
const smallResult = 256 << 10

// screening is the budget every DetectInjectionInResult takes from.
var screening = newScreenBudget(MaxScreeningBytes)

// screenBudget is a budget of bytes being screened. Waiters are not served
// in order: a small result may pass a large one.
type screenBudget struct {
	max int64

	mu   sync.Mutex
	cond sync.Cond
	held int64
	peak int64 // the most ever held, for tests
}

func newScreenBudget(max int64) *screenBudget {
	b := &screenBudget{max: max}
	b.cond.L = &b.mu
	return b
}

// acquire takes n bytes (at most the whole budget), waiting until they
// are free unless n is at most smallResult, and returns what it took, for
// release.
func (b *screenBudget) acquire(n int64) int64 {
	n = min(n, b.max)
	b.mu.Lock()
	defer b.mu.Unlock()
	for n > smallResult && b.held+n > b.max {
		b.cond.Wait()
	}
	b.held += n
	b.peak = max(b.peak, b.held)
	return n
}

// release gives back n bytes acquire took.
func (b *screenBudget) release(n int64) {
	b.mu.Lock()
	b.held -= n
	b.mu.Unlock()
	b.cond.Broadcast()
}

func (b *screenBudget) peakHeld() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.peak
}
