package bench

import (
	"context"
	"slices"
	"sync"
	"time"
)

// Call is one round trip. It returns nil when the call succeeded and the
// answer was the expected one. Calls are made from many goroutines at once.
type Call func(ctx context.Context) error

// Options configures Run. The zero value runs one worker for no time.
type Options struct {
	// Concurrency is the number of workers, each with one call in flight
	// at a time (a closed loop). Less than 1 means 1.
	Concurrency int
	// Duration is how long workers keep starting calls. Calls in flight
	// when it ends are waited for and counted.
	Duration time.Duration
}

// Result is what Run measured.
type Result struct {
	// Calls is the number of calls that succeeded.
	Calls int
	// Errors is the number of calls that failed; FirstErr is one of them.
	Errors   int
	FirstErr error
	// Elapsed runs from the start of the first call to the end of the last.
	Elapsed time.Duration
	// Latencies of the successful calls, in ascending order.
	Latencies []time.Duration
}

// Rate returns successful calls per second.
func (r *Result) Rate() float64 {
	if r.Elapsed <= 0 {
		return 0
	}
	return float64(r.Calls) / r.Elapsed.Seconds()
}

// Run calls call from opts.Concurrency workers until opts.Duration has
// passed or ctx ends, and returns once every worker has stopped. Calls get
// ctx, so cancelling it also abandons the calls in flight; those count as
// errors.
func Run(ctx context.Context, opts Options, call Call) *Result {
	workers := max(opts.Concurrency, 1)
	type tally struct {
		lat      []time.Duration
		errors   int
		firstErr error
	}
	tallies := make([]tally, workers)
	start := time.Now()
	deadline := start.Add(opts.Duration)
	var wg sync.WaitGroup
	for w := range tallies {
		t := &tallies[w]
		wg.Go(func() {
			for ctx.Err() == nil {
				t0 := time.Now()
				if !t0.Before(deadline) {
					return
				}
				if err := call(ctx); err != nil {
					if t.errors == 0 {
						t.firstErr = err
					}
					t.errors++
					continue
				}
				t.lat = append(t.lat, time.Since(t0))
			}
		})
	}
	wg.Wait()
	r := &Result{Elapsed: time.Since(start)}
	for _, t := range tallies {
		r.Calls += len(t.lat)
		r.Latencies = append(r.Latencies, t.lat...)
		if r.FirstErr == nil {
			r.FirstErr = t.firstErr
		}
		r.Errors += t.errors
	}
	slices.Sort(r.Latencies)
	return r
}
