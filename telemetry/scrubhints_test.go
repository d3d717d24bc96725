package telemetry

import (
	"strings"
	"testing"
)

// TestScrubHintsAgree checks the one-pass hint search against searching
// the lowered text for each hint, which is what decides whether Scrub
// looks further: it may answer true where no hint is (text that is not
// ASCII), never false where one is.
func TestScrubHintsAgree(t *testing.T) {
	texts := []string{
		"", "a", "plain text with no hint in it at all",
		"upstream answered 404 to POST /repos/acme/api/issues after 120ms",
		"Kelvin \u212Aey=1", "caf\u00e9 au lait", "\xff\xfe",
	}
	for _, sc := range scrubbers {
		for _, h := range sc.hints {
			texts = append(texts, h, strings.ToUpper(h), "x"+h, h+"x", "some text "+strings.ToUpper(h[:1])+h[1:]+" and more",
				h[:len(h)-1], "ab"+h[:len(h)-1]+"!")
		}
	}
	for _, s := range texts {
		lower := strings.ToLower(s)
		want := false
		for _, sc := range scrubbers {
			for _, h := range sc.hints {
				want = want || strings.Contains(lower, h)
			}
		}
		if got := scrubHints.mayHold(s); got != want && !(got && !isASCII(s)) {
			t.Errorf("mayHold(%q): got %v, want %v", s, got, want)
		}
	}
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}

// TestSecretFragmentsAgree checks the one-pass search of secret words in
// a normalized key against strings.Contains for each.
func TestSecretFragmentsAgree(t *testing.T) {
	keys := []string{"", "a", "message", "maxtokens", "caf\u00e9token", "\xffpasswd", "x"}
	for _, w := range secretWords {
		keys = append(keys, w, "x"+w, w+"x", w[:len(w)-1], "my"+w[:len(w)-1]+"z"+w[len(w)-1:])
	}
	for _, k := range keys {
		want := false
		for _, w := range secretWords {
			want = want || strings.Contains(k, w)
		}
		if got := secretFragments.in(k); got != want {
			t.Errorf("secretFragments.in(%q): got %v, want %v", k, got, want)
		}
	}
}
