package bench

import (
	"testing"
	"time"
)

func TestPercentile(t *testing.T) {
	ms := func(vs ...int) []time.Duration {
		out := make([]time.Duration, len(vs))
		for i, v := range vs {
			out[i] = time.Duration(v) * time.Millisecond
		}
		return out
	}
	hundred := make([]int, 100)
	for i := range hundred {
		hundred[i] = i + 1
	}
	tests := []struct {
		name   string
		sorted []time.Duration
		p      float64
		want   time.Duration
	}{
		{"empty", nil, 50, 0},
		{"one value", ms(7), 99, 7 * time.Millisecond},
		{"median of odd", ms(1, 2, 3, 4, 5), 50, 3 * time.Millisecond},
		{"median of even takes the lower", ms(1, 2, 3, 4), 50, 2 * time.Millisecond},
		{"p99 of 100", ms(hundred...), 99, 99 * time.Millisecond},
		{"p99.9 of 100 is the max", ms(hundred...), 99.9, 100 * time.Millisecond},
		{"p50 of 100", ms(hundred...), 50, 50 * time.Millisecond},
		{"p1 of 100", ms(hundred...), 1, 1 * time.Millisecond},
		{"p0 is the min", ms(3, 4, 5), 0, 3 * time.Millisecond},
		{"p100 is the max", ms(3, 4, 5), 100, 5 * time.Millisecond},
		{"above 100 is the max", ms(3, 4, 5), 250, 5 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Percentile(tt.sorted, tt.p); got != tt.want {
				t.Errorf("Percentile(%v, %v) = %v, want %v", tt.sorted, tt.p, got, tt.want)
			}
		})
	}
}
