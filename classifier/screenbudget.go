package classifier

import "sync"

// MaxScreeningBytes bounds the bytes of results DetectInjectionInResult
// reads at once, across every caller. Reading a result costs several
// times its size while it lasts (the walk's copy, a blob decoded, a run
// of blocks joined: about 3.5 times at most, a 32 MiB result ~110 MiB
// more), so many large results screened together (a malicious upstream's,
// or many agents asking for large results at once) would hold that many
// times over. A result that does not fit waits for others to be read,
// never passed on unread; one larger than the bound is read with no other
// large one. A
// result of at most smallResult bytes (most are) does not wait, nor take
// room: it is not held up behind an upstream's flood of large ones, nor
// does a large one wait for none to be read. Large ones take their turns
// in the order they came, whichever upstream sent them: one upstream's
// flood of large results delays other upstreams' large ones (each read
// of 32 MiB takes ~0.5 s), not their small ones. A call waits with no
// regard to its request's context (DetectInjectionInResult takes none):
// a cancelled one still takes its turn. The memory screening holds beyond the results
// themselves is so about 3.5 × 64 MiB (~225 MiB), and 3.5 × 256 KiB more
// for each small result read at the time.
const MaxScreeningBytes = 64 << 20

// smallResult is the size of a result read without waiting for room.
const smallResult = 256 << 10

// screening is the budget every DetectInjectionInResult takes from.
var screening = newScreenBudget(MaxScreeningBytes)

// screenBudget is a budget of bytes being screened. Results larger than
// smallResult take room in it in the order they came (a ticket each): one
// that does not fit is not passed by later ones that would, or a stream
// of them would keep it waiting for ever. Small ones take no room and
// wait for none: each costs little, and a large one waiting for none to
// be read at all would wait for ever while they keep coming.
type screenBudget struct {
	max int64

	mu            sync.Mutex
	cond          sync.Cond
	held          int64  // by results larger than smallResult
	small         int64  // by the others, for peak
	next, serving uint64 // the tickets of the large ones: the next given, the one whose turn it is
	waiters       int
	peak          int64 // the most ever held, for tests
}

func newScreenBudget(max int64) *screenBudget {
	b := &screenBudget{max: max}
	b.cond.L = &b.mu
	return b
}

// acquire takes n bytes (at most the whole budget), waiting its turn and
// until they are free unless n is at most smallResult, and returns what
// it took, for release.
func (b *screenBudget) acquire(n int64) int64 {
	n = min(n, b.max)
	b.mu.Lock()
	defer b.mu.Unlock()
	if n <= smallResult {
		b.small += n
	} else {
		ticket := b.next
		b.next++
		if ticket != b.serving || b.held+n > b.max {
			b.waiters++
			for ticket != b.serving || b.held+n > b.max {
				b.cond.Wait()
			}
			b.waiters--
		}
		b.serving++
		b.held += n
		b.cond.Broadcast() // the next in turn may fit too
	}
	b.peak = max(b.peak, b.held+b.small)
	return n
}

// release gives back n bytes acquire took.
func (b *screenBudget) release(n int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if n <= smallResult {
		b.small -= n
		return
	}
	b.held -= n
	b.cond.Broadcast()
}

// waiting is how many are waiting for room, for tests.
func (b *screenBudget) waiting() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.waiters
}

func (b *screenBudget) peakHeld() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.peak
}
