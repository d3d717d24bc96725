package ratelimit

import (
	"container/heap"
	"context"
	"math"
	"sync"
	"sync/atomic"
	"time"
)

// Local keeps buckets in the process: at most MaxKeys of them, and at most
// MaxKeysPerOwner made by one owner's Takes. It drops only buckets that
// are full again (a full bucket is as good as a new one: nothing is lost),
// and only when it needs the room; when an owner's share (or the whole
// store) holds nothing but spent buckets, a Take that would make a new
// one is refused with TableFull, rather than a spent bucket forgotten and
// handed back full. So an agent inventing bucket names (by: [tool] with
// made-up tools) neither escapes its limits nor, being bounded by its own
// share, takes room other agents need. Safe for concurrent use.
type Local struct {
	now      func() time.Time
	epoch    time.Time // times are nanoseconds since epoch
	max      int
	perOwner int

	mu      sync.Mutex // guards the fields below
	buckets map[string]*bucket
	owners  map[string]*owner
	all     fullOrder // every bucket

	refused atomic.Int64 // Takes refused with TableFull
}

// A bucket is GCRA's theoretical arrival time: it is full at tat and
// holds (burst*interval - (tat-now)) / interval tokens before.
type bucket struct {
	key      string
	limit    Limit
	interval int64 // ns per token
	window   int64 // burst * interval, capped
	tat      int64
	owner    *owner
	// at is tat as each order last saw it (never later than tat), idx
	// the bucket's place in it: a Take moves tat on without touching the
	// orders, which catch up when asked for their first bucket.
	at  [2]int64
	idx [2]int
}

// owner is the buckets one owner's Takes made.
type owner struct {
	name    string
	buckets fullOrder
}

const (
	inAll = iota
	inOwner
)

// DefaultMaxKeys is Local's bucket count when LocalOptions.MaxKeys is 0.
const DefaultMaxKeys = 100_000

// DefaultMaxKeysPerOwner is the buckets one owner may hold when the
// options give 0 (in process, no more than a tenth of MaxKeys).
const DefaultMaxKeysPerOwner = 1000

// LocalOptions configures NewLocal. The zero value is the defaults.
type LocalOptions struct {
	// MaxKeys bounds the buckets in the store (0: DefaultMaxKeys).
	MaxKeys int
	// MaxKeysPerOwner bounds the buckets one owner's Takes made (0:
	// DefaultMaxKeysPerOwner or a tenth of MaxKeys, whichever is less;
	// never more than MaxKeys). With MaxKeys at least owners ×
	// MaxKeysPerOwner, no owner is refused for lack of room others took.
	MaxKeysPerOwner int
	// Now is the clock (nil: time.Now); tests set it.
	Now func() time.Time
}

// NewLocal returns an in-process Limiter.
func NewLocal(o LocalOptions) *Local {
	l := &Local{now: o.Now, max: o.MaxKeys, perOwner: o.MaxKeysPerOwner}
	if l.now == nil {
		l.now = time.Now
	}
	if l.max <= 0 {
		l.max = DefaultMaxKeys
	}
	if l.perOwner <= 0 {
		l.perOwner = max(min(DefaultMaxKeysPerOwner, l.max/10), 1)
	}
	l.perOwner = min(l.perOwner, l.max)
	l.epoch = l.now()
	l.buckets = make(map[string]*bucket)
	l.owners = make(map[string]*owner)
	l.all.which = inAll
	return l
}

// Refused is how many Takes were refused because they needed a new bucket
// and there was no room (Result.TableFull).
func (l *Local) Refused() int64 { return l.refused.Load() }

// Len is how many buckets the store holds.
func (l *Local) Len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.buckets)
}

func (l *Local) clock() int64 { return int64(l.now().Sub(l.epoch)) }

func (l *Local) Take(_ context.Context, k Bucket) (Result, error) {
	now := l.clock()
	l.mu.Lock()
	b, ok := l.buckets[k.Key]
	if !ok {
		var wait int64
		if b, wait = l.make(k, now); b == nil {
			l.mu.Unlock()
			l.refused.Add(1)
			return Result{RetryAfter: time.Duration(wait), TableFull: true}, nil
		}
	} else if b.limit != k.Limit {
		b.reset(k.Limit, now)
		l.reorder(b)
	}
	next := max(b.tat, now) + b.interval
	if wait := next - b.window - now; wait > 0 {
		l.mu.Unlock()
		return Result{RetryAfter: time.Duration(wait)}, nil
	}
	b.tat = next
	l.mu.Unlock()
	return Result{Allowed: true}, nil
}

// Refund puts back one token Take took from the bucket, as when the call
// it was taken for is not counted after all; a bucket gone or full is
// left as it is.
func (l *Local) Refund(_ context.Context, k Bucket) error {
	now := l.clock()
	l.mu.Lock()
	defer l.mu.Unlock()
	b, ok := l.buckets[k.Key]
	if !ok || b.limit != k.Limit || b.tat <= now {
		return nil
	}
	b.tat = max(b.tat-b.interval, now)
	l.reorder(b) // tat went back: the orders must not keep it later
	return nil
}

// make adds the bucket k, full, charged to its owner, making room by
// dropping a full bucket if the owner's share or the store is at its
// bound. If none is full it returns nil and how long until one is.
// l.mu is held.
func (l *Local) make(k Bucket, now int64) (*bucket, int64) {
	o := l.owners[k.Owner]
	if o != nil && o.buckets.Len() >= l.perOwner {
		if wait := l.dropFull(&o.buckets, now); wait > 0 {
			return nil, wait
		}
	}
	if len(l.buckets) >= l.max {
		if wait := l.dropFull(&l.all, now); wait > 0 {
			return nil, wait
		}
	}
	if o = l.owners[k.Owner]; o == nil { // dropFull may have removed it
		o = &owner{name: k.Owner, buckets: fullOrder{which: inOwner}}
		l.owners[k.Owner] = o
	}
	b := &bucket{key: k.Key, owner: o}
	b.reset(k.Limit, now)
	l.buckets[k.Key] = b
	heap.Push(&l.all, b)
	heap.Push(&o.buckets, b)
	return b, 0
}

// dropFull drops the bucket of h that is full first, if it is full at now,
// and returns 0; else how long until it is. l.mu is held.
func (l *Local) dropFull(h *fullOrder, now int64) int64 {
	b := h.first()
	if b == nil {
		return 0
	}
	if b.tat > now {
		return b.tat - now
	}
	heap.Remove(&l.all, b.idx[inAll])
	heap.Remove(&b.owner.buckets, b.idx[inOwner])
	if b.owner.buckets.Len() == 0 {
		delete(l.owners, b.owner.name)
	}
	delete(l.buckets, b.key)
	return 0
}

// reorder puts b in its place in both orders after its tat went back.
// l.mu is held.
func (l *Local) reorder(b *bucket) {
	b.at = [2]int64{b.tat, b.tat}
	heap.Fix(&l.all, b.idx[inAll])
	heap.Fix(&b.owner.buckets, b.idx[inOwner])
}

// maxWindow bounds a bucket's window (73 years) and maxInterval its
// interval (18 years, longer than any process holding the bucket lives),
// so that now + window + interval never overflows and a window holds at
// least four intervals: a limit of one call a century (1/876000h) allows
// its burst and nothing more, as Redis does, rather than no call at all.
const (
	maxWindow   = math.MaxInt64 / 4
	maxInterval = maxWindow / 4
)

// reset makes b a full bucket of limit lim.
func (b *bucket) reset(lim Limit, now int64) {
	b.limit = lim
	b.interval = min(max(int64(lim.Per)/int64(lim.Rate), 1), maxInterval)
	b.window = maxWindow // a burst too large to count is no limit
	if int64(lim.Burst) < b.window/b.interval {
		b.window = int64(lim.Burst) * b.interval
	}
	b.tat = now
	b.at = [2]int64{now, now}
}

// fullOrder is a heap of buckets, the one full first on top, as far as
// it knows: each bucket's place is by at[which], which a Take leaves
// behind its tat; first brings the top up to date.
type fullOrder struct {
	which int
	b     []*bucket
}

// first is the bucket full first (nil if none). Every at is at most its
// tat, so once the top's at is its tat, no other bucket is full sooner.
// Each catching up is paid for by a Take, so first is cheap over time.
func (h *fullOrder) first() *bucket {
	for len(h.b) > 0 {
		top := h.b[0]
		if top.at[h.which] == top.tat {
			return top
		}
		top.at[h.which] = top.tat
		heap.Fix(h, 0)
	}
	return nil
}

func (h *fullOrder) Len() int { return len(h.b) }
func (h *fullOrder) Less(i, j int) bool {
	return h.b[i].at[h.which] < h.b[j].at[h.which]
}
func (h *fullOrder) Swap(i, j int) {
	h.b[i], h.b[j] = h.b[j], h.b[i]
	h.b[i].idx[h.which] = i
	h.b[j].idx[h.which] = j
}
func (h *fullOrder) Push(x any) {
	b := x.(*bucket)
	b.idx[h.which] = len(h.b)
	h.b = append(h.b, b)
}
func (h *fullOrder) Pop() any {
	b := h.b[len(h.b)-1]
	h.b[len(h.b)-1] = nil
	h.b = h.b[:len(h.b)-1]
	return b
}

var _ Limiter = (*Local)(nil)
