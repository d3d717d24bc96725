package intercept

import (
	"bytes"
	"math"
	"unicode/utf8"
)

// Bounds of what wellFormed vouches for; past them validate asks jsontext.
const (
	wellFormedDepth   = 64 // nesting
	wellFormedMembers = 16 // members of one object, compared pairwise for duplicates (as foldWalk's maxFoldPairs)
)

// wellFormed reports whether body is one JSON value that validate's
// decoder accepts — valid UTF-8, JSON syntax, no duplicate member names —
// found in one pass without the decoder's per-value state machine and
// per-object name set, which were most of decoding a message. It vouches
// only for what it can check simply: a member name holding an escape, a
// \u escape of a surrogate, nesting deeper than wellFormedDepth or an
// object of more than wellFormedMembers members make it return false,
// and so does anything invalid; validate then runs the decoder, whose
// verdict and message stand. So what Decode accepts and rejects, and why,
// is the decoder's alone; FuzzWellFormed holds wellFormed to never
// accepting what the decoder rejects.
func wellFormed(b []byte) bool {
	if len(b) > math.MaxInt32 || !utf8.Valid(b) {
		return false
	}
	// stack holds, for each open array, -1, and for each open object
	// where its names start in names: [start, end) of b, those of the
	// objects still open.
	var stack [wellFormedDepth]int32
	depth := 0
	var nameBuf [wellFormedMembers][2]int32
	names := nameBuf[:0]
	i := skipSpace(b, 0)
value:
	if i >= len(b) {
		return false
	}
	switch c := b[i]; {
	case c == '{':
		if depth == wellFormedDepth {
			return false
		}
		stack[depth] = int32(len(names))
		depth++
		i = skipSpace(b, i+1)
		if i < len(b) && b[i] == '}' {
			depth--
			i++
			goto after
		}
		goto name
	case c == '[':
		if depth == wellFormedDepth {
			return false
		}
		stack[depth] = -1
		depth++
		i = skipSpace(b, i+1)
		if i < len(b) && b[i] == ']' {
			depth--
			i++
			goto after
		}
		goto value
	case c == '"':
		var ok bool
		if i, ok, _ = scanString(b, i); !ok {
			return false
		}
	case c == '-' || '0' <= c && c <= '9':
		var ok bool
		if i, ok = scanNumber(b, i); !ok {
			return false
		}
	case c == 't':
		if !bytes.HasPrefix(b[i:], []byte("true")) {
			return false
		}
		i += 4
	case c == 'f':
		if !bytes.HasPrefix(b[i:], []byte("false")) {
			return false
		}
		i += 5
	case c == 'n':
		if !bytes.HasPrefix(b[i:], []byte("null")) {
			return false
		}
		i += 4
	default:
		return false
	}
after:
	i = skipSpace(b, i)
	if depth == 0 {
		return i == len(b)
	}
	if i >= len(b) {
		return false
	}
	switch top := stack[depth-1]; b[i] {
	case ',':
		i = skipSpace(b, i+1)
		if top >= 0 {
			goto name
		}
		goto value
	case '}':
		if top < 0 {
			return false
		}
		names = names[:top]
	case ']':
		if top >= 0 {
			return false
		}
	default:
		return false
	}
	depth--
	i++
	goto after
name:
	{
		if i >= len(b) || b[i] != '"' {
			return false
		}
		start := i + 1
		end, ok, escaped := scanString(b, i)
		if !ok || escaped {
			return false // an escaped name is compared unescaped: the decoder's to judge
		}
		n := b[start : end-1]
		own := names[stack[depth-1]:]
		if len(own) == wellFormedMembers {
			return false
		}
		for _, o := range own {
			if string(b[o[0]:o[1]]) == string(n) {
				return false // a duplicate: the decoder says so
			}
		}
		names = append(names, [2]int32{int32(start), int32(end - 1)})
		i = skipSpace(b, end)
		if i >= len(b) || b[i] != ':' {
			return false
		}
		i = skipSpace(b, i+1)
		goto value
	}
}

func skipSpace(b []byte, i int) int {
	for i < len(b) {
		switch b[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}

// scanString reads the string at b[i] (a quote), returning the index just
// past its closing quote, whether it is valid (no control character, only
// JSON's escapes, no \u escape of a surrogate) and whether it holds an
// escape. b is valid UTF-8.
func scanString(b []byte, i int) (end int, ok, escaped bool) {
	i++
	for {
		for i < len(b) && stringByte[b[i]] {
			i++
		}
		if i >= len(b) {
			return i, false, escaped
		}
		switch c := b[i]; {
		case c == '"':
			return i + 1, true, escaped
		case c == '\\':
			escaped = true
			if i+1 >= len(b) {
				return i, false, escaped
			}
			switch b[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if i+6 > len(b) {
					return i, false, escaped
				}
				r := 0
				for _, h := range b[i+2 : i+6] {
					switch {
					case '0' <= h && h <= '9':
						r = r<<4 | int(h-'0')
					case 'a' <= h && h <= 'f':
						r = r<<4 | int(h-'a'+10)
					case 'A' <= h && h <= 'F':
						r = r<<4 | int(h-'A'+10)
					default:
						return i, false, escaped
					}
				}
				if 0xD800 <= r && r <= 0xDFFF {
					return i, false, escaped // a surrogate pair, or half of one: the decoder's to judge
				}
				i += 6
			default:
				return i, false, escaped
			}
		case c < 0x20:
			return i, false, escaped
		default:
			i++
		}
	}
}

// stringByte tells the bytes a JSON string holds as they are: all but
// control characters, the quote and the backslash.
var stringByte = func() (t [256]bool) {
	for c := 0x20; c < 256; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// scanNumber reads the number at b[i], returning the index just past it
// and whether it is one under JSON's grammar.
func scanNumber(b []byte, i int) (int, bool) {
	if b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && '1' <= b[i] && b[i] <= '9':
		i = digits(b, i+1)
	default:
		return i, false
	}
	if i < len(b) && b[i] == '.' {
		j := digits(b, i+1)
		if j == i+1 {
			return i, false
		}
		i = j
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		j := digits(b, i)
		if j == i {
			return i, false
		}
		i = j
	}
	return i, true
}

func digits(b []byte, i int) int {
	for i < len(b) && '0' <= b[i] && b[i] <= '9' {
		i++
	}
	return i
}
