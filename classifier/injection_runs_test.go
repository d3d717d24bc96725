package classifier

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// TestEncodedRuns: encodedRuns, which reads only every min-th byte and
// widens around those in the class, finds the runs a byte-by-byte scan
// finds, in the same order and up to the same limit.
func TestEncodedRuns(t *testing.T) {
	byteByByte := func(s string, min, limit int, in *[256]bool) (runs []string) {
		start := -1
		for i := 0; i <= len(s) && limit > 0; i++ {
			if i < len(s) && in[s[i]] {
				if start < 0 {
					start = i
				}
				continue
			}
			if start >= 0 && i-start >= min {
				runs = append(runs, s[start:i])
				limit--
			}
			start = -1
		}
		return runs
	}
	rng := rand.New(rand.NewPCG(1, 2))
	alphabet := "aZ09+/=_- .,!\n\xe4"
	for n := 0; n < 20000; n++ {
		b := make([]byte, rng.IntN(200))
		runLen := 1 + rng.IntN(40)
		for i := range b {
			if i%runLen == 0 && rng.IntN(3) == 0 {
				b[i] = ' '
			} else {
				b[i] = alphabet[rng.IntN(len(alphabet))]
				if rng.IntN(4) != 0 {
					b[i] = alphabet[rng.IntN(4)]
				}
			}
		}
		s := string(b)
		for _, in := range []*[256]bool{&base64Bytes, &hexBytes} {
			min, limit := 1+rng.IntN(30), 1+rng.IntN(8)
			var got []string
			encodedRuns(s, min, limit, in, func(r string) { got = append(got, r) })
			if want := byteByByte(s, min, limit, in); !slices.Equal(got, want) {
				t.Fatalf("encodedRuns(%q, %d, %d): got %q, want %q", s, min, limit, got, want)
			}
		}
	}
}
