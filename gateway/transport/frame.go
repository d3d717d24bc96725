package transport

import (
	"bytes"
	"encoding/binary"

	"github.com/go-json-experiment/json/jsontext"
)

// A MessageError refuses one message that a Conn will not send because it
// is not exactly one valid JSON value (RFC 8259, UTF-8). Nothing was
// written, so the Conn is still usable.
type MessageError struct {
	// Err is what is wrong with the message.
	Err error
}

func (e *MessageError) Error() string { return "transport: message refused: " + e.Err.Error() }

func (e *MessageError) Unwrap() error { return e.Err }

// nel is U+0085 (NEXT LINE) in UTF-8, a line break to Python's
// str.splitlines and to decoders that treat it as one.
var nel = []byte("\u0085")

// Compact returns msg as every Conn in this package sends it: the compact
// encoding of the one JSON value in msg, with no whitespace between tokens
// and with U+2028, U+2029 and U+0085 inside strings escaped as \uXXXX.
// The value is the same, but no byte of the result is a line terminator to
// any reader that frames messages by lines: not LF or CR (Go, the
// TypeScript SDK, Python's universal newlines, Node's readline), and not
// the Unicode line and paragraph separators (JavaScript) or NEL. So a peer
// that splits what it receives by any of these framings finds exactly one
// message, the one that was decided on, and never a second one hidden in
// JSON whitespace or a string.
//
// msg is not modified. A msg that is not exactly one valid JSON value
// (including invalid UTF-8) gives a *[MessageError].
func Compact(msg []byte) ([]byte, error) {
	v := jsontext.Value(bytes.Clone(msg))
	// Compact keeps duplicate names: deciding whether a message means what
	// it says is the decoder's job (package intercept), not framing's.
	if err := v.Compact(jsontext.AllowInvalidUTF8(false), jsontext.EscapeForJS(true)); err != nil {
		return nil, &MessageError{Err: err}
	}
	// After compaction a byte >= 0x80 occurs only inside a string, and in
	// valid UTF-8 the bytes C2 85 can only be U+0085, so replacing them
	// bytewise escapes exactly that character.
	if bytes.Contains(v, nel) {
		v = bytes.ReplaceAll(v, nel, []byte(`\u0085`))
	}
	return v, nil
}

// CompactValid is [Compact] for a msg already known to be exactly one
// valid JSON value, as package intercept leaves what it decoded. A msg
// that is already in compact form and all ASCII (most requests) is
// returned as it is, not copied: nothing in it is JSON whitespace or a
// line terminator to any framing. Anything else, or anything not as
// promised (a control byte), goes through Compact.
func CompactValid(msg []byte) ([]byte, error) {
	if plainCompact(msg) {
		return msg, nil
	}
	inString := false
	for i := 0; i < len(msg); i++ {
		c := msg[i]
		switch {
		case c < 0x20 || c >= 0x80:
			return Compact(msg)
		case inString && c == '\\':
			i++
		case c == '"':
			inString = !inString
		case !inString && c == ' ':
			return Compact(msg)
		}
	}
	if len(msg) == 0 || inString {
		return Compact(msg)
	}
	return msg, nil
}

// plainCompact reports, a word at a time and with bytes' vector scans,
// what CompactValid's loop finds of most requests byte by byte (a
// tools/call of sluice bench, 284 bytes: 38 ns, not 178; issue 13): msg
// is not empty, all printable ASCII, without a blank, and
// without a backslash its quotes pair up (no string is left open). Such
// a msg is returned as it is by the loop too.
func plainCompact(msg []byte) bool {
	if len(msg) == 0 || bytes.IndexByte(msg, ' ') >= 0 || bytes.IndexByte(msg, '\\') >= 0 || bytes.Count(msg, []byte{'"'})%2 != 0 {
		return false
	}
	i := 0
	for ; i+8 <= len(msg); i += 8 {
		// A byte below 0x20 borrows into its top bit when 0x20 is taken
		// from it (a borrow into the bytes above starts only at such a
		// byte); one of 0x80 or more has it set already.
		if w := binary.LittleEndian.Uint64(msg[i:]); ((w-0x2020202020202020)|w)&0x8080808080808080 != 0 {
			return false
		}
	}
	for ; i < len(msg); i++ {
		if c := msg[i]; c < 0x20 || c >= 0x80 {
			return false
		}
	}
	return true
}
