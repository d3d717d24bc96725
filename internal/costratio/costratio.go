// Package costratio times attack input against ordinary input of the
// same size for the CPU-flood tests: not a wall-clock bound, which a
// loaded machine breaks, but a ratio, which it slows on both sides alike.
package costratio

import "time"

// Of returns how many times ordinary's time attack takes, the least of
// five runs of each, and the two times. The runs alternate, so that a
// burst of load elsewhere slows both sides rather than one.
func Of(attack, ordinary func()) (ratio float64, a, o time.Duration) {
	a, o = time.Duration(1<<63-1), time.Duration(1<<63-1)
	for range 5 {
		start := time.Now()
		attack()
		a = min(a, time.Since(start))
		start = time.Now()
		ordinary()
		o = min(o, time.Since(start))
	}
	return float64(a) / float64(o), a, o
}
