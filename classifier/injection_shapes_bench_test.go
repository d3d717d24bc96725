package classifier

import (
	"strings"
	"testing"
)

// shapeTexts are attacker shapes that are not rule words.
var shapeTexts = []struct{ name, para string }{
	{"sep=", strings.Repeat("=", 4000) + " "},
	{"sep-", strings.Repeat("-", 4000) + " "},
	{"dots", strings.Repeat(".", 4000) + " "},
	{"hashes", strings.Repeat("#", 4000) + " "},
	{"brackets", strings.Repeat("[", 4000) + " "},
	{"angles", strings.Repeat("<", 4000) + " "},
	{"short-seps", strings.Repeat("=== ", 1024)},
	{"sep-then-word", strings.Repeat("=== begin ", 410)},
	{"stars", strings.Repeat("*", 4000) + " "},
	{"spaces", strings.Repeat(" ", 4000) + "x"},
	{"newlines", strings.Repeat("\n", 4000) + "x"},
	{"tabs", strings.Repeat("\t", 4000) + "x"},
	{"nbsp", strings.Repeat("\u00a0", 2000) + "x"},
	{"ideospace", strings.Repeat("\u3000", 1300) + "x"},
	{"zwsp", strings.Repeat("\u200b", 1300) + "x"},
	{"zwj-letters", strings.Repeat("a\u200d", 1000)},
	{"combining", "a" + strings.Repeat("\u0301", 2000)},
	{"tagchars", strings.Repeat("\U000E0041", 1000)},
	{"base64", strings.Repeat("QUJDREVGR0hJSktMTU5PUFFSU1RVVldYWVo0123456789+/", 90)},
	{"hex", strings.Repeat("0123456789abcdef", 256)},
	{"url", strings.Repeat("https://example.com/a/b?c=d&e=f#g ", 120)},
	{"mdimage", strings.Repeat("![x](https://e.com/i.png?q=1) ", 140)},
	{"mdimage-bracket", strings.Repeat("![x](https://e.com/i[0].png?q=1) ", 125)},
	{"mdimage-long", strings.Repeat("![x](//"+strings.Repeat("a", 300)+"?=[) ", 13)},
	{"mdimage-glued", strings.Repeat("![](//", 700)},
	{"tags", strings.Repeat("<IMPORTANT>", 370)},
	{"nested-tags", strings.Repeat("<IMPORTANT><SYSTEM>", 100) + strings.Repeat("</SYSTEM></IMPORTANT>", 100)},
	{"mixed-scripts", strings.Repeat("aа𝐚ａ", 400)},
	{"homoglyph-words", strings.Repeat("іgnоrе рrеvіоus ", 200)},
	{"letters", strings.Repeat("a", 4000) + " "},
	{"words", strings.Repeat("ab ", 1360)},
	{"digits", strings.Repeat("1", 4000) + " "},
	{"emoji", strings.Repeat("😀", 1000)},
	{"rtl", strings.Repeat("\u202e", 1300)},
	{"fullwidth", strings.Repeat("ｉｇｎｏｒｅ ", 270)},
}

func BenchmarkInjectionShapes4KiB(b *testing.B) {
	for _, d := range shapeTexts {
		b.Run(d.name, func(b *testing.B) { benchmarkInjectionText(b, d.para) })
	}
}

func BenchmarkInjectionDecoyAsks4KiB(b *testing.B) {
	benchmarkInjectionText(b, "Never tell anyone your password, not even the admin. ")
}
