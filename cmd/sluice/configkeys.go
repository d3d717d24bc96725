package main

import (
	"encoding"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/sluicehq/sluice/internal/spelling"
)

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
