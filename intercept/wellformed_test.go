package intercept

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
)

// decoderValid is validate without wellFormed: the decoder's verdict.
func decoderValid(b []byte) bool {
	p := getDecoder(b)
	defer p.put()
	if _, err := p.dec.ReadValue(); err != nil {
		return false
	}
	_, err := p.dec.ReadToken()
	return errors.Is(err, io.EOF)
}

var wellFormedSeeds = append([]string{
	`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"message":"hi"}}}`,
	`{"jsonrpc":"2.0","id":"a\u00e9","result":{"content":[{"type":"text","text":"Echo: hi"}],"isError":false}}`,
	`[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","method":"notifications/initialized"}]`,
	`{"a":1,"a":2}`, `{"a":{"b":1,"b":1}}`, `{"a":1,"\u0061":2}`, `{"a":{"b":1},"c":{"b":1}}`,
	`"\ud800"`, `"\ud83d\ude00"`, `"\udc00\ud800"`, "\"\x01\"", "\"\xff\"", "\"\xed\xa0\x80\"",
	`-0`, `-`, `01`, `1.`, `1.e1`, `1e`, `1e+`, `.5`, `1.5E-3`, `tru`, `truex`, `nul`, `[1,]`, `[,1]`, `{,}`,
	`{"a":1}}`, `[1]]`, `{"a":1]`, `[1}`, "[1]\x00", " [1] ", "\ufeff[1]", `"\x"`, `"\u12"`, `"\u12G4"`,
	strings.Repeat("[", 64) + strings.Repeat("]", 64), strings.Repeat("[", 65) + strings.Repeat("]", 65),
	strings.Repeat(`{"a":`, 70) + "1" + strings.Repeat("}", 70),
	objectOf(16, false), objectOf(17, false), objectOf(16, true), objectOf(17, true),
}, validMemberSeeds...)

// TestWellFormed: the one-pass check takes the messages the gateway
// forwards most (so that it is the path they take) and never a value the
// decoder refuses.
func TestWellFormed(t *testing.T) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"message":"hi \\ \"there\" \u00e9 日本"}}}`,
		`{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"Echo: hi"}],"structuredContent":{"n":-1.5e3,"ok":true,"x":null}}}`,
		`[{"jsonrpc":"2.0","id":"1","method":"ping"} , {"jsonrpc":"2.0","method":"notifications/initialized"}]`,
	} {
		if !wellFormed([]byte(s)) {
			t.Errorf("wellFormed(%s) = false, want true", s)
		}
	}
	for _, s := range wellFormedSeeds {
		checkWellFormed(t, []byte(s))
	}
}

// FuzzWellFormed holds wellFormed to the decoder: whatever it accepts,
// the decoder accepts.
func FuzzWellFormed(f *testing.F) {
	for _, s := range wellFormedSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(checkWellFormed)
}

func checkWellFormed(t *testing.T, b []byte) {
	if wellFormed(b) && !decoderValid(b) {
		t.Errorf("wellFormed(%q) = true, but the decoder refuses it", b)
	}
}

// objectOf is an object of n members named m0, m1, … (with dup, the last
// named as the first).
func objectOf(n int, dup bool) string {
	var b strings.Builder
	b.WriteString("{")
	for i := range n {
		if i > 0 {
			b.WriteString(",")
		}
		if dup && i == n-1 {
			i = 0
		}
		fmt.Fprintf(&b, `"m%d":{"x":%d}`, i, i)
	}
	b.WriteString("}")
	return b.String()
}
