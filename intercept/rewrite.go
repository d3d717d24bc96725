package intercept

import (
	"bytes"

	"github.com/go-json-experiment/json/jsontext"
)

// WithMember returns a copy of the JSON object obj with member key set to
// val (replacing it where it stands, or appending it), leaving every other
// member byte for byte as it was. The gateway uses it only to change
// correlation values (ids, progress tokens) that it maps back itself; what
// policy saw is otherwise unchanged.
func WithMember(obj jsontext.Value, key string, val jsontext.Value) (jsontext.Value, error) {
	var out bytes.Buffer
	out.Grow(len(obj) + len(val) + len(key) + 4)
	out.WriteByte('{')
	n, replaced := 0, false
	err := eachMember(obj, func(k string, v jsontext.Value) error {
		if n > 0 {
			out.WriteByte(',')
		}
		n++
		writeKey(&out, k)
		if k == key {
			out.Write(val)
			replaced = true
		} else {
			out.Write(v)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if !replaced {
		if n > 0 {
			out.WriteByte(',')
		}
		writeKey(&out, key)
		out.Write(val)
	}
	out.WriteByte('}')
	return out.Bytes(), nil
}

// WithoutMember returns a copy of the JSON object obj without member key,
// every other member byte for byte as it was; obj itself if it has no such
// member.
func WithoutMember(obj jsontext.Value, key string) (jsontext.Value, error) {
	if Member(obj, key) == nil {
		return obj, nil
	}
	return rewriteMembers(obj, map[string]jsontext.Value{key: nil})
}

// rewriteMembers returns a copy of the JSON object obj with each member
// named in repl given the value it has there, or left out where that is
// nil; every other member byte for byte as it was. One pass over obj,
// however many members change.
func rewriteMembers(obj jsontext.Value, repl map[string]jsontext.Value) (jsontext.Value, error) {
	var out bytes.Buffer
	out.Grow(len(obj))
	out.WriteByte('{')
	n := 0
	err := eachMember(obj, func(k string, v jsontext.Value) error {
		if r, ok := repl[k]; ok {
			if r == nil {
				return nil
			}
			v = r
		}
		if n > 0 {
			out.WriteByte(',')
		}
		n++
		writeKey(&out, k)
		out.Write(v)
		return nil
	})
	if err != nil {
		return nil, err
	}
	out.WriteByte('}')
	return out.Bytes(), nil
}

// EachMember calls fn with each member of obj, a JSON object, in order,
// in one pass; the values are slices of obj. It stops at fn's first error
// and returns it, or a parse error.
func EachMember(obj jsontext.Value, fn func(key string, val jsontext.Value) error) error {
	if obj.Kind() != '{' {
		return parseError("not an object")
	}
	return eachMember(obj, fn)
}

// EachElement calls fn with each element of arr, a JSON array, in order,
// in one pass; the values are slices of arr.
func EachElement(arr jsontext.Value, fn func(i int, val jsontext.Value) error) error {
	if arr.Kind() != '[' {
		return parseError("not an array")
	}
	p := getDecoder(arr)
	defer p.put()
	dec := &p.dec
	if _, err := dec.ReadToken(); err != nil {
		return parseError("%s", describe(err))
	}
	for i := 0; dec.PeekKind() != ']'; i++ {
		val, err := dec.ReadValue()
		if err != nil {
			return parseError("%s", describe(err))
		}
		if err := fn(i, val[:len(val):len(val)]); err != nil {
			return err
		}
	}
	return nil
}

// Member returns the value of member key of obj, or nil.
func Member(obj jsontext.Value, key string) jsontext.Value {
	var found jsontext.Value
	if obj.Kind() != '{' {
		return nil
	}
	_ = eachMember(obj, func(k string, v jsontext.Value) error {
		if k == key {
			found = v
		}
		return nil
	})
	return found
}

// StringMember returns the string value of obj's member key, or "" if obj
// is not an object or the member is missing or not a string.
func StringMember(obj jsontext.Value, key string) string { return stringOf(Member(obj, key)) }

// stringOf is the string v holds, or "" if v is not a JSON string.
func stringOf(v jsontext.Value) string {
	if v.Kind() != '"' {
		return ""
	}
	return unquote(v)
}

func writeKey(b *bytes.Buffer, k string) {
	q, _ := jsontext.AppendQuote(nil, k)
	b.Write(q)
	b.WriteByte(':')
}
