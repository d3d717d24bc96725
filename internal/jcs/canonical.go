// Package jcs puts JSON values in their RFC 8785 form, as
// jsontext.Value.Canonicalize does, refusing values nested so deep that
// doing so would cost many times their size.
//
//	v := jsontext.Value(`{"b":1,"a":[2]}`).Clone()
//	if err := jcs.Canonicalize(&v); err != nil { … } // v is {"a":[2],"b":1}
package jcs

import (
	"errors"

	"github.com/go-json-experiment/json/jsontext"
)

// MaxDepth is the deepest nesting of arrays and objects Canonicalize
// takes. Reordering an object's members moves all that is inside it, so
// each level of nested objects costs the size of what it holds again:
// objects 5,000 deep around 1 MiB took over a second, where a flat value
// of that size takes milliseconds. Real tool schemas and arguments nest
// a few dozen levels at most.
const MaxDepth = 128

// ErrTooDeep is the error of a value nested deeper than MaxDepth.
var ErrTooDeep = errors.New("canonical JSON: nested deeper than 128 levels")

// Canonicalize is v.Canonicalize(), or ErrTooDeep (v unchanged) for a
// value nested deeper than MaxDepth.
func Canonicalize(v *jsontext.Value) error {
	if TooDeep(*v, MaxDepth) {
		return ErrTooDeep
	}
	return v.Canonicalize()
}

// TooDeep reports whether b, JSON text, opens more than n arrays or
// objects inside one another. It reads b once, and never fails: on text
// that is not JSON its answer says nothing, but Canonicalize refuses
// such text anyway.
func TooDeep(b []byte, n int) bool {
	depth := 0
	for i := 0; i < len(b); i++ {
		switch b[i] {
		case '"':
			// Skip the string: to the first quote not escaped.
			for i++; i < len(b) && b[i] != '"'; i++ {
				if b[i] == '\\' {
					i++
				}
			}
		case '{', '[':
			if depth++; depth > n {
				return true
			}
		case '}', ']':
			depth--
		}
	}
	return false
}
