package bench

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

func TestRun(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var n atomic.Int64
		errBad := errors.New("bad answer")
		call := func(ctx context.Context) error {
			time.Sleep(10 * time.Millisecond)
			if n.Add(1)%4 == 0 {
				return errBad
			}
			return nil
		}
		res := Run(t.Context(), Options{Concurrency: 4, Duration: 100 * time.Millisecond}, call)

		// Each of 4 workers starts a call at 0, 10, ..., 90ms: 40 calls, of
		// which every fourth fails.
		if got, want := res.Calls+res.Errors, 40; got != want {
			t.Errorf("calls+errors = %d, want %d", got, want)
		}
		if got, want := res.Errors, 10; got != want {
			t.Errorf("errors = %d, want %d", got, want)
		}
		if !errors.Is(res.FirstErr, errBad) {
			t.Errorf("first error = %v, want %v", res.FirstErr, errBad)
		}
		if got, want := res.Elapsed, 100*time.Millisecond; got != want {
			t.Errorf("elapsed = %v, want %v", got, want)
		}
		if got, want := len(res.Latencies), res.Calls; got != want {
			t.Errorf("%d latencies, want one per successful call (%d)", got, want)
		}
		for _, l := range res.Latencies {
			if l != 10*time.Millisecond {
				t.Fatalf("latency %v, want 10ms", l)
			}
		}
		if got, want := res.Rate(), 300.0; got != want {
			t.Errorf("rate = %v calls/s, want %v", got, want)
		}
	})
}

func TestRunStopsWhenCancelled(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		call := func(ctx context.Context) error {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(2 * time.Millisecond):
				return nil
			}
		}
		// Calls start at 0, 2 and 4ms; the one in flight at 5ms is cut off.
		go func() {
			time.Sleep(5 * time.Millisecond)
			cancel()
		}()
		res := Run(ctx, Options{Concurrency: 2, Duration: time.Hour}, call)
		if res.Elapsed != 5*time.Millisecond {
			t.Errorf("elapsed = %v, want 5ms", res.Elapsed)
		}
		if !errors.Is(res.FirstErr, context.Canceled) {
			t.Errorf("first error = %v, want %v", res.FirstErr, context.Canceled)
		}
	})
}

func TestRunZeroOptions(t *testing.T) {
	res := Run(t.Context(), Options{}, func(context.Context) error {
		t.Error("call made with zero duration")
		return nil
	})
	if res.Calls != 0 || res.Rate() != 0 {
		t.Errorf("got %d calls at %v/s, want none", res.Calls, res.Rate())
	}
}
