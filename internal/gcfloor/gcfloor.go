// Package gcfloor keeps the garbage collector from running while the heap
// is small.
//
// Go starts a collection when the heap has grown by GOGC percent (100)
// over what the last one left live. A gateway's live heap is small — a
// few MiB of configuration, tables and buffers — and every call allocates
// a few KiB that die with it, so with GOGC=100 it collects many times a
// second under load, and marking costs a share of every call's CPU
// however little is live. A floor lets the heap grow to at least Floor
// before a collection: the percent is raised while live × (1 + GOGC/100)
// is below it, and is GOGC again once the live heap is large enough (many
// sessions) — a floor, not a higher GOGC, so memory per session is what
// it was.
package gcfloor

import (
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
	"sync/atomic"
)

// maxPercent bounds the percent a floor sets, so that a nearly empty
// heap does not ask for an absurd one.
const maxPercent = 2000

// Start sets a floor of floor bytes under the heap's collection target,
// adjusted after every collection, and returns what ends it. The floor is
// the process's: while one is set, another Start adds a user of it (the
// first floor stays), and the last stop restores the percent the first
// Start found. With GOGC=off (a negative percent) or a zero floor it does
// nothing.
func Start(floor uint64) (stop func()) {
	if floor == 0 {
		return func() {}
	}
	mu.Lock()
	defer mu.Unlock()
	if users == 0 {
		base := debug.SetGCPercent(100)
		debug.SetGCPercent(base)
		if base < 0 {
			return func() {}
		}
		current = &tuner{base: base}
		current.floor.Store(floor)
		current.tune()
		current.arm()
	}
	users++
	var once sync.Once
	return func() {
		once.Do(func() {
			mu.Lock()
			defer mu.Unlock()
			if users--; users == 0 {
				current.stopped.Store(true)
				debug.SetGCPercent(current.base)
				current = nil
			}
		})
	}
}

var (
	mu      sync.Mutex
	users   int
	current *tuner
)

type tuner struct {
	floor   atomic.Uint64
	base    int
	stopped atomic.Bool
	sample  [1]metrics.Sample
}

// sentinel is garbage whose finalizer runs once per collection: it tunes
// the percent and arms the next one.
type sentinel struct {
	t *tuner
	_ [16]byte // not a tiny allocation: those share blocks, and finalize late
}

func (t *tuner) arm() {
	runtime.SetFinalizer(&sentinel{t: t}, func(s *sentinel) {
		if s.t.stopped.Load() {
			return
		}
		s.t.tune()
		s.t.arm()
	})
}

// tune sets the percent whose target is the floor, if GOGC's is below it.
func (t *tuner) tune() {
	t.sample[0].Name = "/gc/heap/live:bytes"
	metrics.Read(t.sample[:])
	debug.SetGCPercent(Percent(t.sample[0].Value.Uint64(), t.floor.Load(), t.base))
}

// Percent is the GOGC percent that puts the next collection at floor
// bytes for a live heap of live bytes, or base if base's target is
// already higher.
func Percent(live, floor uint64, base int) int {
	if live == 0 {
		return maxPercent
	}
	if live*uint64(100+base)/100 >= floor {
		return base
	}
	p := floor*100/live - 100
	return int(min(p, maxPercent))
}
