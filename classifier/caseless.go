package classifier

import (
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"
)

// caselessRunes is a bitmap of the runes of the Basic Multilingual Plane
// that lower-case to themselves and are not spaces: most of a text in a
// script without case (Devanagari, CJK, Arabic, Thai) is copied through
// fold and lowerText as it is, not looked up rune by rune in the case
// tables (a binary search each: a fifth of the cost of scanning Hindi).
var caselessRunes = sync.OnceValue(func() *[0x10000 / 64]uint64 {
	var m [0x10000 / 64]uint64
	for r := rune(utf8.RuneSelf); r < 0x10000; r++ {
		if utf8.ValidRune(r) && unicode.ToLower(r) == r && !unicode.IsSpace(r) {
			m[r/64] |= 1 << (r % 64)
		}
	}
	return &m
})

// caseless reports whether r is in m: see caselessRunes.
func caseless(m *[0x10000 / 64]uint64, r rune) bool {
	return r < 0x10000 && m[r/64]&(1<<(r%64)) != 0
}

// lowerText is strings.ToLower(s), without the case tables' lookup for
// runes that have no case.
func lowerText(s string) string {
	m := caselessRunes()
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 'A' && c <= 'Z' {
				return lowerFrom(m, s, i)
			}
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n == 1 || !caseless(m, r) && unicode.ToLower(r) != r {
			return lowerFrom(m, s, i)
		}
		i += n
	}
	return s
}

// lowerFrom lower-cases s, whose bytes before i need no change.
func lowerFrom(m *[0x10000 / 64]uint64, s string, i int) string {
	var b strings.Builder
	b.Grow(len(s) + utf8.UTFMax)
	b.WriteString(s[:i])
	for i < len(s) {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 'A' && c <= 'Z' {
				c += 'a' - 'A'
			}
			b.WriteByte(c)
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		if caseless(m, r) && n > 1 {
			b.WriteString(s[i : i+n])
		} else {
			// An invalid byte is written as U+FFFD, as strings.Map does.
			b.WriteRune(unicode.ToLower(r))
		}
		i += n
	}
	return b.String()
}
