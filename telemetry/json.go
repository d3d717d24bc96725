package telemetry

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"sync/atomic"
	"time"
	"unicode/utf8"
)

// A Record is an event builder that encodes its attributes itself,
// without building the Attrs map its Event method returns: the audit
// store's fast path for the events of every call.
type Record interface {
	// Header is the event without Attrs.
	Header() Event
	// AppendAttrs appends the attributes as the members of a JSON object,
	// comma-separated and without braces, or nothing if there are none.
	AppendAttrs(b []byte) ([]byte, error)
}

// AppendJSON appends e as JSON, the document encoding/json makes of it up
// to the order of attrs keys, without reflection for the values Sluice's
// events hold: encoding every event is on each call's path, and
// encoding/json's reflection was most of the audit store's CPU. Values of
// other types go through encoding/json.
func (e *Event) AppendJSON(b []byte) ([]byte, error) {
	return appendEvent(b, e, nil)
}

// AppendRecordJSON appends the JSON of r's event, whose header (with the
// time and id stamped as need be) is h, as [Event.AppendJSON] would of
// r's Event.
func AppendRecordJSON(b []byte, h *Event, r Record) ([]byte, error) {
	return appendEvent(b, h, r)
}

func appendEvent(b []byte, e *Event, r Record) ([]byte, error) {
	b = append(b, `{"id":`...)
	b = appendString(b, e.ID)
	if e.Seq != 0 {
		b = append(b, `,"seq":`...)
		b = strconv.AppendInt(b, e.Seq, 10)
	}
	b = append(b, `,"type":`...)
	b = appendString(b, e.Type)
	if y := e.Time.Year(); y < 0 || y > 9999 {
		return nil, fmt.Errorf("event time %v: year outside of range [0,9999]", e.Time)
	}
	b = append(b, `,"time":"`...)
	b = appendRFC3339Nano(b, e.Time)
	b = append(b, '"')
	b = appendField(b, "txn_id", e.TxnID)
	b = appendField(b, "agent", e.Agent)
	b = appendField(b, "session", e.Session)
	b = appendField(b, "upstream", e.Upstream)
	b = appendField(b, "tool", e.Tool)
	b = appendField(b, "decision", e.Decision)
	b = appendField(b, "reason", e.Reason)
	switch {
	case r != nil:
		b = append(b, `,"attrs":{`...)
		n := len(b)
		var err error
		if b, err = r.AppendAttrs(b); err != nil {
			return nil, err
		}
		if len(b) == n { // none: omitempty
			b = b[:n-len(`,"attrs":{`)]
		} else {
			b = append(b, '}')
		}
	case len(e.Attrs) > 0:
		b = append(b, `,"attrs":`...)
		var err error
		if b, err = appendValue(b, e.Attrs); err != nil {
			return nil, err
		}
	}
	return append(b, '}'), nil
}

// appendField appends ,"name":"value" unless value is empty (omitempty).
func appendField(b []byte, name, value string) []byte {
	if value == "" {
		return b
	}
	b = append(b, ',', '"')
	b = append(b, name...)
	b = append(b, '"', ':')
	return appendString(b, value)
}

func appendValue(b []byte, v any) ([]byte, error) {
	var err error
	switch v := v.(type) {
	case nil:
		return append(b, "null"...), nil
	case string:
		return appendString(b, v), nil
	case bool:
		return strconv.AppendBool(b, v), nil
	case int:
		return strconv.AppendInt(b, int64(v), 10), nil
	case int64:
		return strconv.AppendInt(b, v, 10), nil
	case float64:
		return appendFloat(b, v)
	case json.Number:
		if v == "" {
			return append(b, '0'), nil
		}
		if !isValidNumber(string(v)) {
			return nil, fmt.Errorf("json: invalid number literal %q", string(v))
		}
		return append(b, v...), nil
	case []string:
		if v == nil {
			return append(b, "null"...), nil
		}
		b = append(b, '[')
		for i, s := range v {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendString(b, s)
		}
		return append(b, ']'), nil
	case []any:
		if v == nil {
			return append(b, "null"...), nil
		}
		b = append(b, '[')
		for i, x := range v {
			if i > 0 {
				b = append(b, ',')
			}
			if b, err = appendValue(b, x); err != nil {
				return nil, err
			}
		}
		return append(b, ']'), nil
	case map[string]any:
		if v == nil {
			return append(b, "null"...), nil
		}
		b = append(b, '{')
		first := true
		for k, x := range v {
			if !first {
				b = append(b, ',')
			}
			first = false
			b = appendString(b, k)
			b = append(b, ':')
			if b, err = appendValue(b, x); err != nil {
				return nil, err
			}
		}
		return append(b, '}'), nil
	case Evidence:
		return appendEvidence(b, v), nil
	case map[string]AxisClassification:
		if v == nil {
			return append(b, "null"...), nil
		}
		b = append(b, '{')
		first := true
		for k, a := range v {
			if !first {
				b = append(b, ',')
			}
			first = false
			b = appendString(b, k)
			b = append(b, `:{"classified":`...)
			b = appendString(b, a.Classified)
			b = append(b, `,"confidence":`...)
			if b, err = appendFloat(b, a.Confidence); err != nil {
				return nil, err
			}
			b = appendMember(b, 0, "source", a.Source)
			b = append(b, `,"conservative_default_applied":`...)
			b = strconv.AppendBool(b, a.ConservativeDefaultApplied)
			b = append(b, '}')
		}
		return append(b, '}'), nil
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return append(b, raw...), nil
}

func appendEvidence(b []byte, v Evidence) []byte {
	b = append(b, '{')
	n := len(b)
	b = appendMember(b, n, "matched_tool_name", v.MatchedToolName)
	if len(v.MatchedToolClasses) > 0 {
		b = appendName(b, n, "matched_tool_classes")
		b, _ = appendValue(b, v.MatchedToolClasses)
	}
	b = appendMember(b, n, "matched_route_rule_id", v.MatchedRouteRuleID)
	b = appendMember(b, n, "reason_code", v.ReasonCode)
	return append(b, '}')
}

// AppendJSONString appends s as a JSON string, escaped exactly as in the
// events [Event.AppendJSON] writes.
func AppendJSONString(b []byte, s string) []byte { return appendString(b, s) }

// load64 reads the first eight bytes of s, little-endian (one load).
func load64(s string) uint64 {
	_ = s[7]
	return uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24 |
		uint64(s[4])<<32 | uint64(s[5])<<40 | uint64(s[6])<<48 | uint64(s[7])<<56
}

// plain8 reports whether none of the eight bytes of x is below 0x20, a
// quote, a backslash or at or above 0x80: bytes appendString copies as
// they are.
func plain8(x uint64) bool {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	zero := func(v uint64) uint64 { return (v - ones) & ^v & highs } // high bit set where a byte of v is 0
	control := (x - 0x20*ones) & ^x & highs                          // where a byte is below 0x20 (with no high bit)
	return (control | zero(x^('"'*ones)) | zero(x^('\\'*ones)) | x&highs) == 0
}

// ValidUTF8 returns s as the events [Event.AppendJSON] writes hold it:
// each byte that is not part of valid UTF-8 replaced by U+FFFD.
func ValidUTF8(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	b := make([]byte, 0, len(s)+8)
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = utf8.AppendRune(b, utf8.RuneError)
		} else {
			b = append(b, s[i:i+size]...)
		}
		i += size
	}
	return string(b)
}

// appendName appends "name": after a comma unless b has nothing past
// start (the object's first member).
func appendName(b []byte, start int, name string) []byte {
	if len(b) > start {
		b = append(b, ',')
	}
	b = append(b, '"')
	b = append(b, name...)
	return append(b, '"', ':')
}

// appendMember appends "name":"value" as appendName does, unless value is
// empty (omitempty).
func appendMember(b []byte, start int, name, value string) []byte {
	if value == "" {
		return b
	}
	return appendString(appendName(b, start, name), value)
}

// appendFloat formats f as encoding/json does.
func appendFloat(b []byte, f float64) ([]byte, error) {
	// Confidences are mostly hundredths (0.7, 0.85, 1), written on every
	// call's events: those are formatted here, without strconv's
	// shortest-representation search. The decimal k/100 parses back to f
	// and no decimal of fewer digits lies within f's rounding interval
	// (the doubles up to 1e6 are far closer together than 0.01 is wide),
	// so it is what strconv would write. TestAppendFloatHundredths holds
	// it to strconv.
	if f >= 0 && f <= 1e6 && !math.Signbit(f) {
		if k := math.Round(f * 100); k/100 == f {
			n := int64(k)
			b = strconv.AppendInt(b, n/100, 10)
			if c := n % 100; c != 0 {
				b = append(b, '.', byte('0'+c/10))
				if c%10 != 0 {
					b = append(b, byte('0'+c%10))
				}
			}
			return b, nil
		}
	}
	if math.IsInf(f, 0) || math.IsNaN(f) {
		return nil, &json.UnsupportedValueError{Str: strconv.FormatFloat(f, 'g', -1, 64)}
	}
	abs := math.Abs(f)
	if abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		return strconv.AppendFloat(b, f, 'e', -1, 64), nil
	}
	return strconv.AppendFloat(b, f, 'f', -1, 64), nil
}

// isValidNumber reports whether s is a JSON number, as encoding/json
// requires of a json.Number it writes.
func isValidNumber(s string) bool {
	if s == "" {
		return false
	}
	if s[0] == '-' {
		s = s[1:]
		if s == "" {
			return false
		}
	}
	switch {
	case s[0] == '0':
		s = s[1:]
	case '1' <= s[0] && s[0] <= '9':
		s = s[1:]
		for len(s) > 0 && '0' <= s[0] && s[0] <= '9' {
			s = s[1:]
		}
	default:
		return false
	}
	if len(s) >= 2 && s[0] == '.' && '0' <= s[1] && s[1] <= '9' {
		s = s[2:]
		for len(s) > 0 && '0' <= s[0] && s[0] <= '9' {
			s = s[1:]
		}
	}
	if len(s) >= 2 && (s[0] == 'e' || s[0] == 'E') {
		s = s[1:]
		if s[0] == '+' || s[0] == '-' {
			s = s[1:]
			if s == "" {
				return false
			}
		}
		for len(s) > 0 && '0' <= s[0] && s[0] <= '9' {
			s = s[1:]
		}
	}
	return s == ""
}

const hexDigits = "0123456789abcdef"

// appendString appends s as a JSON string: quotes, backslashes and
// control characters escaped, invalid UTF-8 replaced by U+FFFD, as
// encoding/json does.
func appendString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		// Eight bytes at a time while none needs a look: no control
		// character, quote, backslash or non-ASCII byte among them.
		for i+8 <= len(s) && plain8(load64(s[i:i+8])) {
			i += 8
		}
		if i >= len(s) {
			break
		}
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

// appendRFC3339Nano appends t as t.AppendFormat(b, time.RFC3339Nano) does,
// without its layout interpreter for a UTC time of a four-digit year (every
// stored event's: the store keeps them in UTC).
func appendRFC3339Nano(b []byte, t time.Time) []byte {
	if t.Location() != time.UTC {
		return t.AppendFormat(b, time.RFC3339Nano)
	}
	// The events of a second share its text: reading the calendar (two
	// walks from the absolute time, Date and Clock) was most of encoding
	// an event's header.
	sec := t.Unix()
	if c := lastSecond.Load(); c != nil && c.sec == sec {
		b = append(b, c.text[:]...)
	} else {
		year, month, day := t.Date()
		if year < 0 || year > 9999 {
			return t.AppendFormat(b, time.RFC3339Nano)
		}
		hour, minute, sec := t.Clock()
		c := &secondText{sec: t.Unix(), text: [19]byte{byte('0' + year/1000), byte('0' + year/100%10), byte('0' + year/10%10), byte('0' + year%10), '-',
			byte('0' + int(month)/10), byte('0' + int(month)%10), '-', byte('0' + day/10), byte('0' + day%10), 'T',
			byte('0' + hour/10), byte('0' + hour%10), ':', byte('0' + minute/10), byte('0' + minute%10), ':', byte('0' + sec/10), byte('0' + sec%10)}}
		lastSecond.Store(c)
		b = append(b, c.text[:]...)
	}
	if ns := t.Nanosecond(); ns != 0 {
		var d [10]byte
		d[0] = '.'
		for i := 9; i > 0; i-- {
			d[i] = byte('0' + ns%10)
			ns /= 10
		}
		n := 10
		for d[n-1] == '0' {
			n--
		}
		b = append(b, d[:n]...)
	}
	return append(b, 'Z')
}

// secondText is the RFC 3339 text of a UTC second, up to the seconds.
type secondText struct {
	sec  int64 // Unix seconds
	text [19]byte
}

// lastSecond is the text of the second appendRFC3339Nano wrote last: a
// memo of a pure function, shared by every caller.
var lastSecond atomic.Pointer[secondText]
