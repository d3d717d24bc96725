package bench_test

import (
	"fmt"
	"time"

	"github.com/sluicehq/sluice/internal/bench"
)

func ExamplePercentile() {
	lat := []time.Duration{1 * time.Millisecond, 2 * time.Millisecond, 3 * time.Millisecond, 40 * time.Millisecond}
	fmt.Println(bench.Percentile(lat, 50), bench.Percentile(lat, 99))
	// Output: 2ms 40ms
}
