package classifier

import (
	"math/rand/v2"
	"strings"
	"testing"
)

// TestLowerText: lowerText is strings.ToLower, on every rune of the
// Basic Multilingual Plane and beyond, invalid bytes and random mixes.
func TestLowerText(t *testing.T) {
	var all strings.Builder
	for r := rune(0); r < 0x20000; r++ {
		all.WriteRune(r)
	}
	texts := []string{"", "abc", "ABC", "पासवर्ड", "Пароль", "\xff", "a\xffB", "\xe0\xa4", "İstanbul", "ΣΑΣ", all.String()}
	rnd := rand.New(rand.NewPCG(1, 2))
	pool := []string{"a", "Z", " ", "\u00a0", "\u3000", "म", "密", "Ω", "ẞ", "İ", "\xff", "\xe0", "𝐀", "Ａ", "\U000E0041", "ǅ"}
	for range 5000 {
		var b strings.Builder
		for range rnd.IntN(20) {
			b.WriteString(pool[rnd.IntN(len(pool))])
		}
		texts = append(texts, b.String())
	}
	for _, s := range texts {
		if got, want := lowerText(s), strings.ToLower(s); got != want {
			t.Errorf("lowerText(%.40q): got %.40q, want %.40q", s, got, want)
		}
	}
}

// FuzzLowerText: lowerText is strings.ToLower.
func FuzzLowerText(f *testing.F) {
	f.Add("Hello, पासवर्ड Пароль \xff")
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := lowerText(s), strings.ToLower(s); got != want {
			t.Errorf("lowerText(%q): got %q, want %q", s, got, want)
		}
	})
}
