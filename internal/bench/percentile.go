package bench

import (
	"math"
	"time"
)

// Percentile returns the p-th percentile (0 < p <= 100) of sorted, which
// must be in ascending order, by the nearest-rank method: the smallest value
// that at least p percent of the values are less than or equal to. It
// returns 0 for an empty slice; p <= 0 gives the minimum and p >= 100 the
// maximum.
func Percentile(sorted []time.Duration, p float64) time.Duration {
	n := len(sorted)
	if n == 0 {
		return 0
	}
	rank := int(math.Ceil(p / 100 * float64(n)))
	rank = min(max(rank, 1), n)
	return sorted[rank-1]
}
