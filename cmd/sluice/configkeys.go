package main

import (
	"encoding"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/sluicehq/sluice/internal/spelling"
)

// maxExpanded bounds the values a config stands for with its aliases
// expanded. Merge keys naming one anchor twice, each level twice the one
// below, make a few hundred bytes stand for millions of sections, which
// the key and value checks walk and yaml decodes one by one; a config
// that repeats a section or two by alias stays far below it.
const maxExpanded = 100_000

// checkAliases refuses doc, the config as parsed, when its aliases
// expand it to more than maxExpanded values: before anything walks it.
func checkAliases(file string, doc *yaml.Node) error {
	sizes := map[*yaml.Node]int{} // a node's size expanded; -1 while it is counted
	var size func(n *yaml.Node) int
	size = func(n *yaml.Node) int {
		for n != nil && n.Kind == yaml.AliasNode {
			n = n.Alias
		}
		if n == nil {
			return 0
		}
		if s, ok := sizes[n]; ok {
			if s < 0 {
				return maxExpanded + 1 // an anchor inside itself
			}
			return s
		}
		sizes[n] = -1
		s := 1
		for _, c := range n.Content {
			if s += size(c); s > maxExpanded {
				s = maxExpanded + 1
				break
			}
		}
		sizes[n] = s
		return s
	}
	if size(doc) > maxExpanded {
		return fmt.Errorf("%s: its aliases (*name, <<: *name) expand it to more than %d values: write the repeated parts out, or alias each at most once or twice", file, maxExpanded)
	}
	return nil
}

// unknownKeys reports every mapping key in doc that the config struct t
// (and the sections inside it) has no field for, each with its file,
// line and column, where it is, and the nearest known key when one is
// close: a typo says `sluice.yaml:3:1: unknown key "polcy"; did you mean
// "policy"?` rather than yaml's `field polcy not found in type
// main.config`. Sections held as a yaml.Node (the inline policy) or
// decoded by their own UnmarshalYAML are left to their own checks.
func unknownKeys(file string, doc *yaml.Node, t reflect.Type) error {
	var errs []error
	walkKeys(file, doc, t, "", &errs)
	return errors.Join(errs...)
}

var (
	nodeType        = reflect.TypeFor[yaml.Node]()
	unmarshalerType = reflect.TypeFor[yaml.Unmarshaler]()
	textType        = reflect.TypeFor[encoding.TextUnmarshaler]()
)

func walkKeys(file string, n *yaml.Node, t reflect.Type, where string, errs *[]error) {
	for n != nil && n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if n == nil || t == nodeType || reflect.PointerTo(t).Implements(unmarshalerType) || reflect.PointerTo(t).Implements(textType) {
		return
	}
	if n.Kind == yaml.DocumentNode {
		for _, c := range n.Content {
			walkKeys(file, c, t, where, errs)
		}
		return
	}
	switch t.Kind() {
	case reflect.Struct:
		if n.Kind != yaml.MappingNode {
			return // a type error, which the decoder reports
		}
		fields := map[string]reflect.Type{}
		yamlFields(t, fields)
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			if k.Value == "<<" { // a merge key: its mapping's keys are this one's
				walkKeys(file, v, t, where, errs)
				continue
			}
			ft, ok := fields[k.Value]
			if !ok {
				*errs = append(*errs, unknownKeyError(file, k, where, fields))
				continue
			}
			walkKeys(file, v, ft, join(where, k.Value), errs)
		}
	case reflect.Slice, reflect.Array:
		if n.Kind != yaml.SequenceNode {
			return
		}
		for i, c := range n.Content {
			name := fmt.Sprintf("%s[%d]", where, i)
			walkKeys(file, c, t.Elem(), name, errs)
		}
	case reflect.Map:
		if n.Kind != yaml.MappingNode {
			return
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			walkKeys(file, n.Content[i+1], t.Elem(), join(where, n.Content[i].Value), errs)
		}
	}
}

func join(where, key string) string {
	if where == "" {
		return key
	}
	return where + "." + key
}

// yamlFields adds the YAML keys of struct t to fields, with inline
// structs' keys as their own.
func yamlFields(t reflect.Type, fields map[string]reflect.Type) {
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("yaml")
		if !f.IsExported() || tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		if slices.Contains(strings.Split(opts, ","), "inline") {
			ft := f.Type
			for ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				yamlFields(ft, fields)
			}
			continue
		}
		if name == "" {
			name = strings.ToLower(f.Name)
		}
		fields[name] = f.Type
	}
}

func unknownKeyError(file string, k *yaml.Node, where string, fields map[string]reflect.Type) error {
	in := ""
	if where != "" {
		in = " in " + where
	}
	msg := fmt.Sprintf("%s:%d:%d: unknown key %q%s", file, k.Line, k.Column, k.Value, in)
	if s := nearest(k.Value, fields); s != "" {
		return fmt.Errorf("%s; did you mean %q?", msg, s)
	}
	keys := make([]string, 0, len(fields))
	for f := range fields {
		keys = append(keys, f)
	}
	slices.Sort(keys)
	return fmt.Errorf("%s; the keys here are %s", msg, strings.Join(keys, ", "))
}

// nearest is the known key closest to key by edit distance, if it is
// close enough to be a typo of it; else "".
func nearest(key string, fields map[string]reflect.Type) string {
	best, bestD := "", 0
	for f := range fields {
		d := spelling.Distance(strings.ToLower(key), f)
		if best == "" || d < bestD || (d == bestD && f < best) {
			best, bestD = f, d
		}
	}
	if best == "" || bestD > max(2, len(best)/3) {
		return ""
	}
	return best
}

var durationType = reflect.TypeFor[time.Duration]()

// valueErrors reports each value in doc that the config struct t cannot
// hold, with its file, line, column and key and what the key takes: yaml's
// own `line 2: cannot unmarshal !!str `30d` into time.Duration` names
// neither the key nor the fix. It is called once the decoder has failed
// with a type error; nil means it found none to name better.
func valueErrors(file string, doc *yaml.Node, t reflect.Type) error {
	var errs []error
	walkValues(file, doc, t, "", &errs)
	return errors.Join(errs...)
}

func walkValues(file string, n *yaml.Node, t reflect.Type, where string, errs *[]error) {
	for n != nil && n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if n == nil || t == nodeType {
		return
	}
	if n.Kind == yaml.DocumentNode {
		for _, c := range n.Content {
			walkValues(file, c, t, where, errs)
		}
		return
	}
	if n.Tag == "!!null" {
		return // an empty value leaves the zero value
	}
	at := fmt.Sprintf("%s:%d:%d: %s: ", file, n.Line, n.Column, where)
	if where == "" { // the document itself
		at = fmt.Sprintf("%s:%d:%d: ", file, n.Line, n.Column)
	}
	wrong := func(want string) {
		*errs = append(*errs, fmt.Errorf("%s%s is not %s", at, shownValue(n), want))
	}
	switch {
	case reflect.PointerTo(t).Implements(unmarshalerType) || reflect.PointerTo(t).Implements(textType):
		if err := n.Decode(reflect.New(t).Interface()); err != nil {
			*errs = append(*errs, fmt.Errorf("%s%v", at, err))
		}
	case t.Kind() == reflect.Struct:
		if n.Kind != yaml.MappingNode {
			wrong("a mapping (key: value lines)")
			return
		}
		fields := map[string]reflect.Type{}
		yamlFields(t, fields)
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			if k.Value == "<<" {
				walkValues(file, v, t, where, errs)
			} else if ft, ok := fields[k.Value]; ok {
				walkValues(file, v, ft, join(where, k.Value), errs)
			}
		}
	case t.Kind() == reflect.Map:
		if n.Kind != yaml.MappingNode {
			wrong("a mapping (key: value lines)")
			return
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			walkValues(file, n.Content[i+1], t.Elem(), join(where, n.Content[i].Value), errs)
		}
	case t.Kind() == reflect.Slice || t.Kind() == reflect.Array:
		if n.Kind != yaml.SequenceNode {
			wrong("a list ([a, b], or lines starting with -)")
			return
		}
		for i, c := range n.Content {
			walkValues(file, c, t.Elem(), fmt.Sprintf("%s[%d]", where, i), errs)
		}
	default:
		err := n.Decode(reflect.New(t).Interface())
		switch want := valueWanted(t); {
		case err == nil:
		case want != "":
			wrong(want)
		default:
			*errs = append(*errs, fmt.Errorf("%s%v", at, err))
		}
	}
}

// valueWanted says what a value of a plain type t is written as; "" for
// a type whose own decoder explains itself.
func valueWanted(t reflect.Type) string {
	switch {
	case t == durationType:
		return "a duration such as 500ms, 30s, 15m or 720h (h is the largest unit: 30 days is 720h)"
	case t.Kind() == reflect.Bool:
		return "true or false"
	case t.Kind() >= reflect.Int && t.Kind() <= reflect.Uint64:
		return "a whole number"
	case t.Kind() == reflect.Float32 || t.Kind() == reflect.Float64:
		return "a number"
	case t.Kind() == reflect.String:
		return "a string"
	}
	return ""
}

// shownValue is n as an error quotes it: a scalar's text, else its kind.
func shownValue(n *yaml.Node) string {
	switch n.Kind {
	case yaml.ScalarNode:
		return strconv.Quote(n.Value)
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	}
	return "the value"
}
