package telemetry

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/go-json-experiment/json/jsontext"
)

// hashArguments is the SHA-256 [Redactor.Arguments] stores, computed
// from the tokens of raw without building the decoded value: redacting,
// scrubbing and canonicalizing as it reads. It is what every call pays
// when only the hash is kept. ok is false for anything it does not take
// on (duplicate names, invalid UTF-8, trailing data, numbers out of
// range), which the decoding path then handles: its answer is the
// reference, and this one must equal it (FuzzArgumentsHash).
func hashArguments(raw []byte, extra []string) (sum string, ok bool) {
	if sum, ok := hashFlat(raw, extra); ok {
		return sum, true
	}
	d := decoders.Get().(*pooledDecoder)
	c := &d.c
	defer func() {
		d.rd.Reset(nil) // keep no reference to raw
		c.release()
		decoders.Put(d)
	}()
	d.rd.Reset(raw)
	// Duplicate names are found after sorting each object's members,
	// which costs less than the decoder's own check.
	d.dec.Reset(&d.rd, jsontext.AllowDuplicateNames(true))
	c.extra = extra
	c.copyBudget = copyBudget * (len(raw) + 1024)
	out, ok := c.value(&d.dec, c.buf(0)[:0])
	if out != nil {
		c.keep(0, out)
	}
	if !ok {
		return "", false
	}
	if _, err := d.dec.ReadToken(); err != io.EOF { // more after the value
		return "", false
	}
	h := sha256.Sum256(out)
	var x [2 * sha256.Size]byte // one allocation, the string, where EncodeToString makes two
	hex.Encode(x[:], h[:])
	return string(x[:]), true
}

type pooledDecoder struct {
	dec jsontext.Decoder
	rd  bytes.Reader
	c   canonWriter
}

var decoders = sync.Pool{New: func() any { return new(pooledDecoder) }}

// canonWriter writes the canonical form. Its buffers are reused from one
// call to the next (it lives in a pooled decoder): bufs[0] holds the
// output, bufs[d] and members[d-1] an object's members at depth d.
type canonWriter struct {
	extra []string
	depth int
	// copyBudget is what is left to copy of objects' members into the
	// object above them.
	copyBudget int
	bufs       [][]byte
	members    [][]member
}

// copyBudget bounds, as a multiple of the arguments' size, the bytes
// copied from each object's scratch buffer into its parent's: each level
// of nested objects copies all that is below it again, so that objects
// nested 5,000 deep around a 1 MiB string cost 5,000 MiB of copying (85
// times the hash of flat arguments as long). Past the budget the hash is
// left to the decoding path, which writes each byte once.
const copyBudget = 8

// maxKeptBuf bounds the buffers a pooled canonWriter keeps.
const maxKeptBuf = 64 << 10

func (c *canonWriter) buf(i int) []byte {
	for len(c.bufs) <= i {
		c.bufs = append(c.bufs, make([]byte, 0, 256))
	}
	return c.bufs[i]
}

// keep stores b, grown, as buffer i for the next use.
func (c *canonWriter) keep(i int, b []byte) {
	if cap(b) <= maxKeptBuf {
		c.bufs[i] = b[:0]
	}
}

func (c *canonWriter) membersAt(d int) []member {
	for len(c.members) <= d {
		c.members = append(c.members, make([]member, 0, 8))
	}
	return c.members[d][:0]
}

// release drops what the last call left: its names, its extra keys.
func (c *canonWriter) release() {
	for i := range c.members {
		clear(c.members[i][:cap(c.members[i])])
	}
	c.extra, c.depth = nil, 0
}

// member is an object member canonicalized into a scratch buffer.
type member struct {
	name       string
	start, end int
}

// value appends the canonical form of the next value of dec, redacted
// and scrubbed, to b.
func (c *canonWriter) value(dec *jsontext.Decoder, b []byte) ([]byte, bool) {
	tok, err := dec.ReadToken()
	if err != nil {
		return nil, false
	}
	switch tok.Kind() {
	case 'n':
		return append(b, "null"...), true
	case 't':
		return append(b, "true"...), true
	case 'f':
		return append(b, "false"...), true
	case '"':
		return appendCanonString(b, Scrub(tok.String())), true
	case '0':
		f, err := strconv.ParseFloat(tok.String(), 64)
		if err != nil {
			return nil, false
		}
		if b, err = appendCanonNumber(b, f); err != nil {
			return nil, false
		}
		return b, true
	case '[':
		b = append(b, '[')
		for i := 0; dec.PeekKind() != ']'; i++ {
			if i > 0 {
				b = append(b, ',')
			}
			if dec.PeekKind() == '"' {
				// Perhaps a [name, value] pair naming a credential, or a
				// program's option naming one before its value: the
				// decoding path redacts those.
				tok, err := dec.ReadToken()
				if err != nil || i == 0 && secretName(tok.String(), c.extra) || secretOption(tok.String(), c.extra) || userOption(tok.String()) {
					return nil, false
				}
				b = appendCanonString(b, Scrub(tok.String()))
				continue
			}
			var ok bool
			if b, ok = c.value(dec, b); !ok {
				return nil, false
			}
		}
		if _, err := dec.ReadToken(); err != nil {
			return nil, false
		}
		return append(b, ']'), true
	case '{':
		c.depth++
		scratch := c.buf(c.depth)[:0]
		members := c.membersAt(c.depth - 1)
		defer func() {
			c.keep(c.depth, scratch)
			if cap(members) <= maxKeptBuf/32 {
				c.members[c.depth-1] = members[:0]
			}
			c.depth--
		}()
		var pairNamed, pairValued bool
		for dec.PeekKind() != '}' {
			name, err := dec.ReadToken()
			if err != nil {
				return nil, false
			}
			m := member{name: name.String(), start: len(scratch)}
			n := normalizeKey(m.name)
			pairNamed = pairNamed || pairName(n)
			pairValued = pairValued || pairValue(n)
			if isSecret(m.name, n, c.extra) {
				if err := dec.SkipValue(); err != nil {
					return nil, false
				}
				scratch = appendCanonString(scratch, Redacted)
			} else {
				var ok bool
				if scratch, ok = c.value(dec, scratch); !ok {
					return nil, false
				}
			}
			m.end = len(scratch)
			members = append(members, m)
		}
		if _, err := dec.ReadToken(); err != nil {
			return nil, false
		}
		if pairNamed && pairValued {
			// Perhaps a name/value pair naming a credential
			// (secretPair): the decoding path redacts those.
			return nil, false
		}
		if c.copyBudget -= len(scratch); c.copyBudget < 0 {
			return nil, false
		}
		slices.SortFunc(members, func(x, y member) int { return compareUTF16(x.name, y.name) })
		b = append(b, '{')
		for i, m := range members {
			if i > 0 {
				if m.name == members[i-1].name {
					return nil, false // a duplicate name: decoding keeps the last
				}
				b = append(b, ',')
			}
			b = appendCanonString(b, m.name)
			b = append(b, ':')
			b = append(b, scratch[m.start:m.end]...)
		}
		return append(b, '}'), true
	}
	return nil, false
}

// hashFlat is hashArguments for the arguments most calls carry, read
// without a decoder (the decoder's set-up and tokens were most of the
// hash's cost; issue 13): one object, written without blanks, of at most
// maxFlat members whose names and string values are printable ASCII
// without escapes and whose values are strings, true, false or null. It
// writes what value writes for them: members sorted by name, a
// secret-named member's value redacted, strings scrubbed. ok is false
// for anything else, and for what value leaves to the decoding path (a
// duplicate name, a name/value pair); hashArguments then reads it.
func hashFlat(raw []byte, extra []string) (sum string, ok bool) {
	if len(raw) < 2 || raw[0] != '{' || raw[len(raw)-1] != '}' {
		return "", false
	}
	var mb [maxFlat]flatMember
	members := mb[:0]
	for i := 1; i < len(raw)-1; {
		if len(members) == maxFlat {
			return "", false
		}
		name, next, ok := flatString(raw, i)
		if !ok || next >= len(raw) || raw[next] != ':' {
			return "", false
		}
		m := flatMember{name: string(name)}
		i = next + 1
		switch {
		case i < len(raw) && raw[i] == '"':
			var s []byte
			if s, i, ok = flatString(raw, i); !ok {
				return "", false
			}
			m.str, m.isStr = string(s), true
		case bytes.HasPrefix(raw[i:], []byte("true")):
			m.lit, i = "true", i+4
		case bytes.HasPrefix(raw[i:], []byte("false")):
			m.lit, i = "false", i+5
		case bytes.HasPrefix(raw[i:], []byte("null")):
			m.lit, i = "null", i+4
		default:
			return "", false
		}
		members = append(members, m)
		switch {
		case i == len(raw)-1:
		case raw[i] == ',' && i+1 < len(raw)-1:
			i++
		default:
			return "", false
		}
	}
	var pairNamed, pairValued bool
	for k := range members {
		n := normalizeKey(members[k].name)
		pairNamed = pairNamed || pairName(n)
		pairValued = pairValued || pairValue(n)
		members[k].secret = isSecret(members[k].name, n, extra)
	}
	if pairNamed && pairValued {
		return "", false // perhaps a credential's name/value pair: the decoding path redacts those
	}
	// Names of ASCII: UTF-16 order is byte order.
	slices.SortFunc(members, func(x, y flatMember) int { return strings.Compare(x.name, y.name) })
	var buf [512]byte
	b := append(buf[:0], '{')
	for k, m := range members {
		if k > 0 {
			if m.name == members[k-1].name {
				return "", false // a duplicate name: decoding keeps the last
			}
			b = append(b, ',')
		}
		b = appendCanonString(b, m.name)
		b = append(b, ':')
		switch {
		case m.secret:
			b = appendCanonString(b, Redacted)
		case m.isStr:
			b = appendCanonString(b, Scrub(m.str))
		default:
			b = append(b, m.lit...)
		}
	}
	b = append(b, '}')
	h := sha256.Sum256(b)
	var x [2 * sha256.Size]byte
	hex.Encode(x[:], h[:])
	return string(x[:]), true
}

// maxFlat is the most members hashFlat takes: its members live on the
// stack.
const maxFlat = 8

type flatMember struct {
	name, str, lit string
	isStr, secret  bool
}

// flatString reads the string that starts at raw[i] if it is printable
// ASCII without escapes, and returns its content and the index after it.
func flatString(raw []byte, i int) (s []byte, next int, ok bool) {
	if i >= len(raw) || raw[i] != '"' {
		return nil, 0, false
	}
	for j := i + 1; j < len(raw); j++ {
		switch c := raw[j]; {
		case c == '"':
			return raw[i+1 : j], j + 1, true
		case c < 0x20 || c > 0x7e || c == '\\':
			return nil, 0, false
		}
	}
	return nil, 0, false
}
