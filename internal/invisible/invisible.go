// Package invisible says which characters show as nothing, or as
// something else, where a person reads names an agent chose: the console's
// pages and the CLI's tables spell them out, so "ali\u200Bce" and
// "ali\uFE0Fce" cannot pass for alice.
package invisible

import (
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
)

// Is reports a character that shows as nothing, or as something else:
// format characters (bidirectional controls, zero-width spaces and
// joiners, soft hyphens, tag characters), controls, the line and
// paragraph separators, and Unicode's other default-ignorable characters
// (variation selectors, the combining grapheme joiner, the Hangul fillers,
// Khmer's inherent vowels).
func Is(r rune) bool {
	return unicode.In(r, unicode.Cf, unicode.Cc, unicode.Zl, unicode.Zp, unicode.Variation_Selector, unicode.Other_Default_Ignorable_Code_Point) ||
		r >= 0xe0000 && r <= 0xe01ef
}

// SpellOut returns q, a quoted string (strconv.Quote's or %q's, which
// keep what Go calls printable), with every character Is reports written
// as its escape: "ali\ufe0fce", not a name that reads as alice.
func SpellOut(q string) string {
	if strings.IndexFunc(q, Is) < 0 {
		return q
	}
	var b strings.Builder
	for _, r := range q {
		switch {
		case !Is(r):
			b.WriteRune(r)
		case r > 0xffff:
			fmt.Fprintf(&b, `\U%08x`, r)
		default:
			fmt.Fprintf(&b, `\u%04x`, r)
		}
	}
	return b.String()
}

// AppendJSON appends the JSON document b to dst with every non-ASCII
// character that is not printable, or shows as nothing (Is: a
// variation selector), written as a \u escape: format
// characters (bidi overrides and isolates, zero-width spaces, tag
// characters), C1 controls and the like, which encoding/json leaves as
// they are. An agent's name must not reorder or hide the rest of an
// event's line on the operator's terminal. Outside its strings JSON holds
// only ASCII, so only string contents change, to a spelling that decodes
// to the same value.
func AppendJSON(dst, b []byte) []byte {
	start := 0
	for i := 0; i < len(b); {
		if b[i] < utf8.RuneSelf {
			i++
			continue
		}
		r, size := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && size == 1 || unicode.IsPrint(r) && !Is(r) {
			i += size
			continue
		}
		dst = append(dst, b[start:i]...)
		if r1, r2 := utf16.EncodeRune(r); r1 != utf8.RuneError {
			dst = fmt.Appendf(dst, `\u%04x\u%04x`, r1, r2)
		} else {
			dst = fmt.Appendf(dst, `\u%04x`, r)
		}
		i += size
		start = i
	}
	return append(dst, b[start:]...)
}

// Name returns an agent's name as a person should read it: as it is,
// unless it has white space that text does not show as it is (at either
// end, two spaces in a row, any blank but the space: a tab, a line break,
// a no-break or ideographic space, a blank Braille pattern) or starts
// with a quote, and then quoted (strconv.Quote), so that "alice " cannot
// read as alice, nor a name with quotes of its own as another's quoted.
func Name(s string) string {
	if s == "" || s != strings.TrimFunc(s, Blank) || strings.Contains(s, "  ") || strings.HasPrefix(s, `"`) ||
		strings.ContainsFunc(s, func(r rune) bool { return r != ' ' && Blank(r) }) {
		return strconv.Quote(s)
	}
	return s
}

// Blank reports white space, or a character that shows as a blank.
func Blank(r rune) bool { return unicode.IsSpace(r) || unicode.Is(unicode.Zs, r) || r == 0x2800 }
