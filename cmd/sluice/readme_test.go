package main

import (
	"os"
	"reflect"
	"regexp"
	"strings"
	"testing"
)

// TestREADMEConfigKeys: every key of sluice.yaml, and of its sections one
// level down, is documented in README.md, so the reference cannot drift
// from the config struct. A key counts as documented as `key` or
// `section.key` (in the config table), as `key` on a line naming its
// section, or as `key:` in a section's YAML example.
func TestREADMEConfigKeys(t *testing.T) {
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	readme := string(b)
	lines := strings.Split(readme, "\n")
	documented := func(section, key string) bool {
		full := key
		if section != "" {
			full = section + "." + key
		}
		for _, l := range lines {
			switch {
			case strings.Contains(l, "`"+full+"`"), strings.Contains(l, "`"+full+"."), strings.Contains(l, "`"+section+"[]."+key+"`"):
				return true
			case section == "":
				continue
			case strings.Contains(l, "`"+key+"`") && strings.Contains(l, section):
				return true
			case regexp.MustCompile(`^\s+` + regexp.QuoteMeta(key) + `:`).MatchString(l):
				return true
			}
		}
		return false
	}
	top := map[string]reflect.Type{}
	yamlFields(reflect.TypeFor[config](), top)
	for key, ty := range top {
		if !documented("", key) && !strings.Contains(readme, "`"+key+"`") {
			t.Errorf("README.md does not document the config key %s", key)
		}
		for ty.Kind() == reflect.Pointer || ty.Kind() == reflect.Slice {
			ty = ty.Elem()
		}
		if ty.Kind() != reflect.Struct || ty == nodeType {
			continue
		}
		sub := map[string]reflect.Type{}
		yamlFields(ty, sub)
		for k := range sub {
			if !documented(key, k) {
				t.Errorf("README.md does not document the config key %s.%s", key, k)
			}
		}
	}
}
