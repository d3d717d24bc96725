package telemetry

import (
	"strings"
	"testing"
)

// FuzzScrubHints checks the one-pass searches against searching for each
// hint (and secret word) in turn: a text the fast path lets by unscrubbed
// must hold no hint once lowered, and a key must be found secret as
// before.
func FuzzScrubHints(f *testing.F) {
	for _, sc := range scrubbers {
		for _, h := range sc.hints {
			f.Add("x " + strings.ToUpper(h) + " y")
		}
	}
	f.Add("Bearer abcdefghijklmnop")
	f.Fuzz(func(t *testing.T, s string) {
		lower := strings.ToLower(s)
		for _, sc := range scrubbers {
			for _, h := range sc.hints {
				if strings.Contains(lower, h) && !scrubHints.mayHold(s) {
					t.Fatalf("mayHold(%q): false, but its lowered text holds %q", s, h)
				}
			}
		}
		want := false
		for _, w := range secretWords {
			want = want || strings.Contains(lower, w)
		}
		if got := secretFragments.in(lower); got != want {
			t.Fatalf("secretFragments.in(%q): got %v, want %v", lower, got, want)
		}
	})
}
