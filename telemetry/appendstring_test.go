package telemetry

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// appendStringRef is appendString's definition, a byte at a time: what
// the eight-bytes-at-a-time loop must give on any input.
func appendStringRef(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' && c < utf8.RuneSelf {
			i++
			continue
		}
		if c < utf8.RuneSelf {
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// FuzzAppendString holds appendString to its definition.
func FuzzAppendString(f *testing.F) {
	for _, s := range []string{"", "abc", "hello world, this is plain", "a\"b\\c\nd\x01\x1f\x7f\u00e9\xff日本語 more text here!", strings.Repeat("x", 17) + "\"", "01234567\x0089abcdef",
		// one byte that needs a look inside an otherwise plain block of eight
		"abcdefgh12\"45678ijklmnop", "abcdefgh12\\45678ijklmnop", "abcdefgh12\x1f45678ijklmnop", "abcdefgh12\x7f45678ijklmnop",
		"abcdefgh12\xc3\xa95678ijklmnop", "abcdefgh12\xff45678ijklmnop", "abcdefgh1234567\x00ijklmnop"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := string(appendString(nil, s)), string(appendStringRef(nil, s)); got != want {
			t.Errorf("%q: got %s want %s", s, got, want)
		}
	})
}

// BenchmarkAppendString: an event's typical string, plain ASCII.
func BenchmarkAppendString(b *testing.B) {
	s := "urn:sluice:classifier:-:2ed330cdac77d2c0 allowed by policy (echo) http://127.0.0.1:46577/mcp 01a2177592270e11bc39c52dc6907d9d"
	var buf []byte
	b.Run("new", func(b *testing.B) {
		for b.Loop() {
			buf = appendString(buf[:0], s)
		}
	})
	b.Run("ref", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			buf = appendStringRef(buf[:0], s)
		}
	})
}
