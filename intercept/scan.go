package intercept

import (
	"bytes"

	"github.com/go-json-experiment/json/jsontext"
)

// eachValidMember is eachMember for an object that is a slice of a body
// validate accepted (UTF-8, syntax, duplicate names): it finds the members'
// bounds by structure alone, without checking again what validate checked,
// so that decoding a message reads its bytes once more rather than once
// per level of nesting. On a value that is not valid JSON its result is
// unspecified but it neither panics nor loops: it may report an error.
// FuzzValidMembers holds it to eachMember on valid objects.
func eachValidMember(obj jsontext.Value, fn func(key string, val jsontext.Value) error) error {
	return eachValidRaw(obj, func(name, val jsontext.Value) error { return fn(memberName(name), val) })
}

// ValidMember is [Member] for an object that is a message [Decode] or
// [DecodeMessage] accepted, or a part of one (its params, _meta,
// arguments): it finds the member by structure, comparing names as they
// are written, without decoding the object again or allocating. On
// other input its result is unspecified (it neither panics nor loops).
func ValidMember(obj jsontext.Value, key string) jsontext.Value {
	if obj.Kind() != '{' {
		return nil
	}
	var found jsontext.Value
	_ = eachValidRaw(obj, func(name, val jsontext.Value) error {
		if found == nil && nameIs(name, key) {
			found = val
		}
		return nil
	})
	return found
}

// ValidMembers is [ValidMember] of two keys in one pass over obj.
func ValidMembers(obj jsontext.Value, key1, key2 string) (val1, val2 jsontext.Value) {
	if obj.Kind() != '{' {
		return nil, nil
	}
	_ = eachValidRaw(obj, func(name, val jsontext.Value) error {
		switch {
		case val1 == nil && nameIs(name, key1):
			val1 = val
		case val2 == nil && nameIs(name, key2):
			val2 = val
		}
		return nil
	})
	return val1, val2
}

// ValidString is the string v holds, or "" if v is not a JSON string.
func ValidString(v jsontext.Value) string { return stringOf(v) }

// ValidStringMember is [StringMember] with [ValidMember]'s precondition.
func ValidStringMember(obj jsontext.Value, key string) string { return stringOf(ValidMember(obj, key)) }

// nameIs reports whether the quoted member name raw is key.
func nameIs(raw jsontext.Value, key string) bool {
	if len(raw) < 2 {
		return false
	}
	if bytes.IndexByte(raw, '\\') < 0 {
		return string(raw[1:len(raw)-1]) == key
	}
	return memberName(raw) == key
}

// eachValidRaw is eachValidMember with each member's name as written
// (quoted, escapes and all).
func eachValidRaw(obj jsontext.Value, fn func(name, val jsontext.Value) error) error {
	s := validScanner{b: obj}
	s.ws()
	if !s.eat('{') {
		return parseError("expected an object")
	}
	s.ws()
	if s.eat('}') {
		return nil
	}
	for {
		s.ws()
		start := s.i
		if !s.str() {
			return parseError("invalid object member name")
		}
		name := obj[start:s.i]
		s.ws()
		if !s.eat(':') {
			return parseError("expected ':' after an object member name")
		}
		s.ws()
		start = s.i
		if !s.value() {
			return parseError("invalid object member value")
		}
		if err := fn(name, obj[start:s.i:s.i]); err != nil {
			return err
		}
		s.ws()
		switch {
		case s.eat(','):
		case s.eat('}'):
			return nil
		default:
			return parseError("expected ',' or '}' after an object member")
		}
	}
}

// validScanner walks valid JSON by its structure.
type validScanner struct {
	b []byte
	i int
}

func (s *validScanner) ws() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

func (s *validScanner) eat(c byte) bool {
	if s.i < len(s.b) && s.b[s.i] == c {
		s.i++
		return true
	}
	return false
}

// str skips a string, quotes included.
func (s *validScanner) str() bool {
	if !s.eat('"') {
		return false
	}
	// The closing quote is the first one not escaped: found with two
	// IndexByte scans (vectorised; IndexAny loops byte by byte), the next
	// quote q kept until an escape is seen to cover it, so that a string
	// of many escapes is still read once.
	q := -1
	for {
		if q < s.i {
			j := bytes.IndexByte(s.b[s.i:], '"')
			if j < 0 {
				s.i = len(s.b)
				return false
			}
			q = s.i + j
		}
		k := bytes.IndexByte(s.b[s.i:q], '\\')
		if k < 0 {
			s.i = q + 1
			return true
		}
		s.i += k + 2 // a backslash and the byte it escapes
		if s.i > len(s.b) {
			s.i = len(s.b)
			return false
		}
	}
}

// value skips one value.
func (s *validScanner) value() bool {
	if s.i >= len(s.b) {
		return false
	}
	switch s.b[s.i] {
	case '"':
		return s.str()
	case '{', '[':
		depth := 0
		for s.i < len(s.b) {
			switch s.b[s.i] {
			case '"':
				if !s.str() {
					return false
				}
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					s.i++
					return true
				}
			}
			s.i++
		}
		return false
	default: // a number or a literal: up to the next delimiter
		start := s.i
		for s.i < len(s.b) {
			switch s.b[s.i] {
			case ',', '}', ']', ' ', '\t', '\n', '\r':
				return s.i > start
			}
			s.i++
		}
		return s.i > start
	}
}
