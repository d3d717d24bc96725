// Package invisible says which characters show as nothing, or as
// something else, where a person reads names an agent chose: the console's
// pages and the CLI's tables spell them out, so "ali\u200Bce" and
// "ali\uFE0Fce" cannot pass for alice.
package invisible

import "unicode"

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
