// Package costratio times attack input against ordinary input of the
// same size for the CPU-flood tests: not a wall-clock bound, which a
// loaded machine breaks, but a ratio, which it slows on both sides alike.
package costratio

import "time"

// Least is the shortest of three runs of f.
func Least(f func()) time.Duration {
	least := time.Duration(1<<63 - 1)
	for range 3 {
		start := time.Now()
		f()
		least = min(least, time.Since(start))
	}
	return least
}

// Of returns how many times ordinary's time attack takes, the least of
// three runs of each, and the two times.
func Of(attack, ordinary func()) (ratio float64, a, o time.Duration) {
	a, o = Least(attack), Least(ordinary)
	return float64(a) / float64(o), a, o
}
