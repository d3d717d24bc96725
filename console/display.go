package console

import (
	"bytes"
	"encoding/json"
	"fmt"
	"github.com/sluicehq/sluice/internal/invisible"
	"strings"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/go-json-experiment/json/jsontext"
)

// What the console shows comes from agents and upstreams, which choose
// its characters and its layout as well as its words. Two things keep
// them from disguising what an operator reads:
//
//   - bidirectional controls (and the line and paragraph separators) are
//     spelt out as \u{202E} on every page and on the live feed: they
//     would otherwise turn the rest of a line around, as in an agent's
//     name (a tool's name with them never gets this far: the gateway
//     refuses it); so are the other invisible characters (zero-width
//     spaces and joiners, soft hyphens, tag characters, controls but
//     line breaks and tabs), with which "ali\u200bce" reads as alice;
//   - a call's arguments are laid out by the console, not by the agent:
//     indented JSON, one member a line, with every invisible character in
//     a string written as its \u escape, so white space between members
//     cannot push one out of sight and no string can pass for a member.

// isBidi reports a character that changes the direction or the lines of
// the text around it.
func isBidi(r rune) bool {
	switch {
	case r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069, r == 0x200e, r == 0x200f, r == 0x061c,
		r == 0x2028, r == 0x2029:
		return true
	}
	return false
}

// hidden reports a character a page spells out: a bidirectional control
// or another invisible character, but for the line breaks and tabs of
// the page itself; or a blank other than the ASCII space (a no-break
// space, an ideographic space, a blank Braille pattern), which at the end
// of a name is as good as invisible.
func hidden(r rune) bool {
	return isBidi(r) || invisible.Is(r) && r != '\n' && r != '\t' && r != '\r' ||
		r > 0x7f && unicode.Is(unicode.Zs, r) || r == 0x2800
}

// nameText is how a page shows a name an agent chose (invisible.Name):
// quoted when it has white space HTML would not show as it is, so that
// "alice " cannot read as alice. The page spells out its other blanks
// (hidden).
func nameText(s string) string { return invisible.Name(s) }

// spellBidi writes the hidden characters in b as \u{XXXX}; b itself is
// returned when it holds none. The text written is plain ASCII, safe in
// any place of an HTML page or a JSON string.
func spellBidi(b []byte) []byte {
	if !bytes.ContainsFunc(b, hidden) {
		return b
	}
	out := make([]byte, 0, len(b)+32)
	for len(b) > 0 {
		i := bytes.IndexFunc(b, hidden)
		if i < 0 {
			return append(out, b...)
		}
		out = append(out, b[:i]...)
		r, n := utf8.DecodeRune(b[i:])
		out = fmt.Appendf(out, `\u{%04X}`, r)
		b = b[i+n:]
	}
	return out
}

// maxLayoutGrowth is how much more than twice their size a call's
// arguments may take laid out before they are shown compact.
const maxLayoutGrowth = 64 << 10

// laidOutSize is about how many bytes v, valid JSON, takes laid out one
// value a line, each line indented by its depth.
func laidOutSize(v jsontext.Value) int {
	dec := jsontext.NewDecoder(bytes.NewReader(v))
	n := len(v)
	for {
		if _, err := dec.ReadToken(); err != nil {
			return n
		}
		n += 3 + 2*dec.StackDepth() // a line break, the indentation, ": "
	}
}

// shownSize is about how many bytes argumentsText shows v, held JSON,
// in: laid out, or compact when that would take much more.
func shownSize(v jsontext.Value) int {
	if n := laidOutSize(v); n <= 2*len(v)+maxLayoutGrowth {
		return n
	}
	return len(v)
}

func spellBidiString(s string) string {
	if strings.IndexFunc(s, hidden) < 0 {
		return s
	}
	return string(spellBidi([]byte(s)))
}

// argumentsText lays out a call's arguments for a page: a held call's raw
// JSON (jsontext.Value) or a recorded call's decoded, redacted value.
// Members keep their order (raw) or are sorted (decoded); invisible
// characters, which valid JSON holds only inside strings, become \u
// escapes, so the text is still the same JSON. Arguments that would lay
// out much larger than they are (nested deep: each line is indented by
// its depth, which the agent chooses) are shown compact, as the page
// wraps them.
func argumentsText(v any) string {
	var compact jsontext.Value
	switch a := v.(type) {
	case nil:
		return ""
	case jsontext.Value:
		if len(a) == 0 {
			return ""
		}
		compact = a.Clone()
		if err := compact.Compact(); err != nil {
			return spellBidiString(string(a)) // not JSON: as sent, but no direction changes
		}
	default:
		var b bytes.Buffer
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(false) // the page escapes; "<" reads better than \u003c
		if err := enc.Encode(a); err != nil {
			return fmt.Sprintf("(arguments not shown: %v)", err)
		}
		compact = jsontext.Value(bytes.TrimRight(b.Bytes(), "\n"))
	}
	out := []byte(compact)
	if laidOutSize(compact) <= 2*len(compact)+maxLayoutGrowth {
		f := compact.Clone()
		if err := f.Indent(jsontext.WithIndent("  ")); err == nil {
			out = f
		}
	}
	if !bytes.ContainsFunc(out, func(r rune) bool { return r != '\n' && invisible.Is(r) }) {
		return string(out)
	}
	var s strings.Builder
	for _, r := range string(out) {
		switch {
		case r == '\n' || !invisible.Is(r):
			s.WriteRune(r)
		case r > 0xffff:
			hi, lo := utf16.EncodeRune(r)
			fmt.Fprintf(&s, `\u%04x\u%04x`, hi, lo)
		default:
			fmt.Fprintf(&s, `\u%04x`, r)
		}
	}
	return s.String()
}
