package classifier

import (
	"errors"
	"strconv"
	"strings"
	"sync"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/go-json-experiment/json/jsontext"
)

// Limits on what one walk over arguments looks at, so that a huge or
// deeply nested argument costs a bounded amount of work.
const (
	maxWalkDepth  = 32
	maxWalkValues = 4096
)

// jsonWalker visits the scalars and containers of a JSON value depth-first
// and keeps the path to the current value for reports. It is a small
// hand-written scanner rather than a jsontext.Decoder because it runs on
// every call and only reads: it must cost well under a microsecond for
// ordinary arguments.
type jsonWalker struct {
	s     string
	i     int
	seen  int
	stack []walkFrame
	visit func(w *jsonWalker, ev walkEvent)
	names bool
	buf   []byte
	// maxDepth and maxValues bound the walk: maxWalkDepth and
	// maxWalkValues, or what walkJSONWhole sets.
	maxDepth, maxValues int
}

type walkFrame struct {
	key   string // object member name; for arrays, the array's own key
	index int    // next element index, arrays only
	array bool
	start int // where the value starts in the text walked
}

// walkEvent is one visited value.
type walkEvent struct {
	kind jsontext.Kind // '"', '0', 't', 'f', 'n', '[' (array end, with n), '{' (object end, with n)
	key  string        // nearest member name: for array elements, the array's
	str  string
	num  float64
	n    int // members or elements, for '[' and '{'
}

var walkerPool = sync.Pool{New: func() any { return new(jsonWalker) }}

// walkJSON calls visit for every string, number, boolean and null in v and
// once at the end of every array and object. Object member names are
// visited as strings, with the path ending in that name, when names is
// set. It stops quietly at malformed input, past maxWalkDepth or after
// maxWalkValues; what it visited before stays visited.
func walkJSON(v jsontext.Value, names bool, visit func(w *jsonWalker, ev walkEvent)) {
	walkJSONWithin(v, names, maxWalkDepth, maxWalkValues, visit)
}

// walkJSONWhole is walkJSON without its bounds on values and depth but
// JSON's own (jsontext's 10,000 levels, which a message the gateway
// decoded is within): for a tool's result, which the model reads whole,
// and an injection placed past a bound would go unseen.
func walkJSONWhole(v jsontext.Value, names bool, visit func(w *jsonWalker, ev walkEvent)) {
	walkJSONWithin(v, names, 10000, len(v), visit)
}

func walkJSONWithin(v jsontext.Value, names bool, maxDepth, maxValues int, visit func(w *jsonWalker, ev walkEvent)) {
	if len(v) == 0 {
		return
	}
	w := walkerPool.Get().(*jsonWalker)
	w.s, w.i, w.seen, w.visit, w.names = string(v), 0, 0, visit, names
	w.maxDepth, w.maxValues = maxDepth, maxValues
	w.value("")
	w.s, w.visit, w.stack = "", nil, w.stack[:0]
	walkerPool.Put(w)
}

// value reads one value whose nearest member name is key. It returns
// false to stop the walk.
func (w *jsonWalker) value(key string) bool {
	w.space()
	if w.i >= len(w.s) || w.seen >= w.maxValues {
		return false
	}
	w.seen++
	switch c := w.s[w.i]; {
	case c == '{':
		return w.object(key)
	case c == '[':
		return w.array(key)
	case c == '"':
		s, ok := w.str()
		if ok {
			w.visit(w, walkEvent{kind: '"', key: key, str: s})
		}
		return ok
	case c == 't' || c == 'f' || c == 'n':
		lit := "null"
		switch c {
		case 't':
			lit = "true"
		case 'f':
			lit = "false"
		}
		if !strings.HasPrefix(w.s[w.i:], lit) {
			return false
		}
		w.i += len(lit)
		w.visit(w, walkEvent{kind: jsontext.Kind(c), key: key})
		return true
	case c == '-' || c >= '0' && c <= '9':
		start := w.i
		for w.i < len(w.s) && strings.IndexByte("+-.eE0123456789", w.s[w.i]) >= 0 {
			w.i++
		}
		f, err := strconv.ParseFloat(w.s[start:w.i], 64)
		if err != nil && !errors.Is(err, strconv.ErrRange) {
			// (A number past float64's range, 1e999, is valid JSON,
			// read as ±Inf: the walk goes on past it.)
			return false
		}
		w.visit(w, walkEvent{kind: '0', key: key, num: f})
		return true
	}
	return false
}

func (w *jsonWalker) object(key string) bool {
	if len(w.stack) >= w.maxDepth {
		return false
	}
	w.stack = append(w.stack, walkFrame{key: key, start: w.i})
	w.i++ // {
	top := len(w.stack) - 1
	n := 0
	for {
		w.space()
		if w.i < len(w.s) && w.s[w.i] == '}' && n == 0 {
			break
		}
		if w.i >= len(w.s) || w.s[w.i] != '"' {
			return false
		}
		name, ok := w.str()
		if !ok {
			return false
		}
		w.stack[top].key = name
		if w.names {
			w.visit(w, walkEvent{kind: '"', str: name})
		}
		w.space()
		if w.i >= len(w.s) || w.s[w.i] != ':' {
			return false
		}
		w.i++
		if !w.value(name) {
			return false
		}
		n++
		w.space()
		if w.i < len(w.s) && w.s[w.i] == ',' {
			w.i++
			continue
		}
		break
	}
	if w.i >= len(w.s) || w.s[w.i] != '}' {
		return false
	}
	w.i++
	w.stack = w.stack[:top]
	w.visit(w, walkEvent{kind: '{', key: key, n: n})
	return true
}

func (w *jsonWalker) array(key string) bool {
	if len(w.stack) >= w.maxDepth {
		return false
	}
	w.stack = append(w.stack, walkFrame{key: key, array: true, start: w.i})
	w.i++ // [
	top := len(w.stack) - 1
	n := 0
	for {
		w.space()
		if w.i < len(w.s) && w.s[w.i] == ']' && n == 0 {
			break
		}
		if !w.value(key) {
			return false
		}
		n++
		w.stack[top].index = n
		w.space()
		if w.i < len(w.s) && w.s[w.i] == ',' {
			w.i++
			continue
		}
		break
	}
	if w.i >= len(w.s) || w.s[w.i] != ']' {
		return false
	}
	w.i++
	w.stack = w.stack[:top]
	w.visit(w, walkEvent{kind: '[', key: key, n: n})
	return true
}

func (w *jsonWalker) space() {
	for w.i < len(w.s) {
		switch w.s[w.i] {
		case ' ', '\t', '\n', '\r':
			w.i++
		default:
			return
		}
	}
}

// str reads a string at w.i. Strings without escapes are substrings of
// the input and cost nothing.
func (w *jsonWalker) str() (string, bool) {
	w.i++ // opening quote
	start := w.i
	for w.i < len(w.s) {
		switch c := w.s[w.i]; {
		case c == '"':
			s := w.s[start:w.i]
			w.i++
			return s, true
		case c == '\\':
			return w.escaped(start)
		case c < 0x20:
			return "", false
		}
		w.i++
	}
	return "", false
}

func (w *jsonWalker) escaped(start int) (string, bool) {
	b := append(w.buf[:0], w.s[start:w.i]...)
	for w.i < len(w.s) {
		c := w.s[w.i]
		switch {
		case c == '"':
			w.i++
			w.buf = b
			return string(b), true
		case c < 0x20:
			return "", false
		case c != '\\':
			b = append(b, c)
			w.i++
			continue
		}
		if w.i+1 >= len(w.s) {
			return "", false
		}
		e := w.s[w.i+1]
		w.i += 2
		switch e {
		case '"', '\\', '/':
			b = append(b, e)
		case 'b':
			b = append(b, '\b')
		case 'f':
			b = append(b, '\f')
		case 'n':
			b = append(b, '\n')
		case 'r':
			b = append(b, '\r')
		case 't':
			b = append(b, '\t')
		case 'u':
			r, ok := w.hex4()
			if !ok {
				return "", false
			}
			if utf16.IsSurrogate(r) {
				r2 := rune(-1)
				if strings.HasPrefix(w.s[w.i:], `\u`) {
					w.i += 2
					r2, ok = w.hex4()
					if !ok {
						return "", false
					}
				}
				r = utf16.DecodeRune(r, r2)
			}
			b = utf8.AppendRune(b, r)
		default:
			return "", false
		}
	}
	return "", false
}

func (w *jsonWalker) hex4() (rune, bool) {
	if w.i+4 > len(w.s) {
		return 0, false
	}
	n, err := strconv.ParseUint(w.s[w.i:w.i+4], 16, 32)
	if err != nil {
		return 0, false
	}
	w.i += 4
	return rune(n), true
}

// path renders where the walker is, such as "items[2].text". Only reports
// need it, so it is built on demand.
func (w *jsonWalker) path() string { return stackPath(w.stack) }

// stackPath is the path of the value at the top of stack.
func stackPath(stack []walkFrame) string {
	var b strings.Builder
	for i, f := range stack {
		if f.array {
			if i == 0 {
				b.WriteString("$")
			}
			b.WriteByte('[')
			b.WriteString(strconv.Itoa(f.index))
			b.WriteByte(']')
			continue
		}
		if f.key == "" {
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('.')
		}
		b.WriteString(f.key)
	}
	if b.Len() == 0 {
		return "$"
	}
	return b.String()
}
