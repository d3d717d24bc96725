package gcfloor

import (
	"runtime"
	"runtime/debug"
	"testing"
)

func TestPercent(t *testing.T) {
	for _, tc := range []struct {
		live, floor uint64
		base, want  int
	}{
		{16 << 20, 64 << 20, 100, 300},  // target 64 MiB
		{32 << 20, 64 << 20, 100, 100},  // GOGC's own target is the floor
		{100 << 20, 64 << 20, 100, 100}, // above it: GOGC
		{40 << 20, 64 << 20, 100, 100},  // 80 MiB already
		{10 << 20, 64 << 20, 50, 540},   // base 50: still lifted to the floor
		{1 << 10, 64 << 20, 100, 2000},  // bounded
		{0, 64 << 20, 100, maxPercent},  // nothing live yet
	} {
		if got := Percent(tc.live, tc.floor, tc.base); got != tc.want {
			t.Errorf("Percent(%d, %d, %d) = %d, want %d", tc.live, tc.floor, tc.base, got, tc.want)
		}
	}
}

// TestStart: with a small heap, a floor raises the percent after each
// collection; the last stop puts back the percent found.
func TestStart(t *testing.T) {
	orig := debug.SetGCPercent(100)
	defer debug.SetGCPercent(orig)
	stop := Start(1 << 30)
	stop2 := Start(1 << 20) // a second user: the first floor stays
	runtime.GC()
	runtime.GC() // the finalizer of the first cycle's sentinel has run
	if p := debug.SetGCPercent(-1); p <= 100 {
		t.Errorf("percent with a 1 GiB floor: %d, want it raised above 100", p)
	} else {
		debug.SetGCPercent(p)
	}
	// After each collection the percent follows the heap: with the floor
	// below what is live, it is GOGC's again.
	current.floor.Store(1)
	runtime.GC()
	runtime.GC()
	if p := debug.SetGCPercent(-1); p != 100 {
		t.Errorf("percent once the heap is above the floor: %d, want 100", p)
	}
	debug.SetGCPercent(100)
	current.floor.Store(1 << 30)
	runtime.GC()
	runtime.GC()
	stop()
	stop() // twice: counted once
	if p := debug.SetGCPercent(-1); p <= 100 {
		t.Errorf("percent after one of two stops: %d, want still raised", p)
	} else {
		debug.SetGCPercent(p)
	}
	stop2()
	if p := debug.SetGCPercent(100); p != 100 {
		t.Errorf("percent after the last stop: %d, want 100 again", p)
	}
}
