package policy

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// Tool names match exactly after Unicode NFC normalisation, and only then.
// A name that is not configured but looks like one that is (a case
// variant, a compatibility form, a homoglyph, or the same letters with
// invisible characters in between) is a finding: the policy denies it with
// ReasonLookalike instead of letting it fall through to the default, so that
// neither a rule nor a missing rule can be dodged by spelling a tool
// differently.

// nfc returns s in Unicode normalisation form C. It does not allocate for
// an ASCII name, which is always in NFC.
func nfc(s string) string {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			if norm.NFC.QuickSpanString(s) == len(s) {
				return s
			}
			return norm.NFC.String(s)
		}
	}
	return s
}

// skeleton maps a tool name to a form in which names a reader cannot tell
// apart are equal. It is a small, deliberately conservative cousin of the
// UTS #39 skeleton: compatibility decomposition (NFKD: full-width letters,
// ligatures, superscripts), dropping of combining marks, format and
// default-ignorable characters (zero-width joiners and spaces, soft hyphens,
// bidi controls, tag characters, variation selectors) and white space,
// case folding, and a table of common homoglyphs. Two different names with
// the same skeleton are look-alikes.
func skeleton(s string) string {
	s = norm.NFKD.String(s)
	var b strings.Builder
	b.Grow(len(s))
	for _, r := range s {
		switch {
		case unicode.In(r, unicode.Mn, unicode.Me, unicode.Cf, unicode.Cc, unicode.Zs, unicode.Zl, unicode.Zp,
			unicode.Other_Default_Ignorable_Code_Point, unicode.Variation_Selector):
			continue
		case unicode.Is(unicode.Pd, r):
			r = '-'
		}
		r = unicode.ToLower(r)
		if m, ok := homoglyphs[r]; ok {
			r = m
		}
		b.WriteRune(r)
	}
	out := b.String()
	// Multi-letter look-alikes, after the single letters are folded.
	if strings.Contains(out, "rn") {
		out = strings.ReplaceAll(out, "rn", "m")
	}
	if strings.Contains(out, "vv") {
		out = strings.ReplaceAll(out, "vv", "w")
	}
	return out
}

// homoglyphs maps lower-case letters to the Latin letter they are mistaken
// for. The vertical strokes (l, 1, I, |, Cyrillic palochka, dotless i) all
// fold to i, so that an upper-case I passes for an l and a digit 1 for
// either.
var homoglyphs = map[rune]rune{
	// ASCII.
	'l': 'i', '1': 'i', '|': 'i', '0': 'o',
	// Latin extensions.
	'ı': 'i', 'ɩ': 'i', 'ǀ': 'i', 'ɡ': 'g', 'ɑ': 'a', 'ʏ': 'y', 'ſ': 's',
	// Cyrillic.
	'а': 'a', 'в': 'b', 'г': 'r', 'е': 'e', 'ё': 'e', 'з': '3', 'і': 'i', 'ї': 'i', 'ј': 'j',
	'к': 'k', 'м': 'm', 'н': 'h', 'о': 'o', 'п': 'n', 'р': 'p', 'с': 'c', 'т': 't',
	'у': 'y', 'х': 'x', 'ѕ': 's', 'һ': 'h', 'ԁ': 'd', 'ԛ': 'q', 'ԝ': 'w', 'ӏ': 'i',
	'ь': 'b', 'ѡ': 'w', 'ɼ': 'r',
	// Greek.
	'α': 'a', 'β': 'b', 'γ': 'y', 'ε': 'e', 'η': 'n', 'ι': 'i', 'κ': 'k', 'ν': 'v',
	'ο': 'o', 'ρ': 'p', 'τ': 't', 'υ': 'u', 'χ': 'x', 'ω': 'w', 'μ': 'u',
	// Armenian and others that pass for Latin letters.
	'օ': 'o', 'ս': 'u', 'ց': 'g', 'հ': 'h', 'ո': 'n',
}
