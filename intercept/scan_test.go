package intercept

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/go-json-experiment/json/jsontext"
)

// members lists what a member walk gives, or its error.
func members(walk func(jsontext.Value, func(string, jsontext.Value) error) error, v jsontext.Value) (string, error) {
	var b strings.Builder
	err := walk(v, func(k string, val jsontext.Value) error {
		fmt.Fprintf(&b, "%q=%s;", k, val)
		return nil
	})
	return b.String(), err
}

var validMemberSeeds = []string{
	// Escapes before, at and after the next quote: "\"" ends after an
	// escaped backslash, "\\"" after an escaped quote.
	`{"a":"\\","b":"\"\\\"","c":"x\n\"y","\"d":1}`, `{"e":"` + strings.Repeat(`\n`, 300) + `","f":2}`,
	`{}`, ` { } `, `{"a":1}`, `{"a":"}{][\"","b":[1,{"c":"]"}],"d":{"e":null}}`,
	`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"message":"hi \\ \"there\""},"_meta":{}}}`,
	`{"\u0061b":true , "c" : -1.5e+3,"d":false,"e":[ ],"f":"\u00e9\ud83d\ude00"}`,
	"{\n\t\"x\"\r\n:\n[\"a\\\\\", \"b\"]\n}", `{"k":"日本語","v":[[[[]]]]}`,
	`{"a":1,}`, `{"a"}`, `{"a":`, `{"a":"\`, `{`, `[1]`, `"x"`, `{"a":1 "b":2}`, "",
}

// TestValidMembers: on valid objects the structural walk finds exactly the
// members the decoder does.
func TestValidMembers(t *testing.T) {
	for _, s := range validMemberSeeds {
		checkValidMembers(t, []byte(s))
	}
}

func FuzzValidMembers(f *testing.F) {
	for _, s := range validMemberSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(checkValidMembers)
}

func checkValidMembers(t *testing.T, b []byte) {
	got, gotErr := members(eachValidMember, b) // must not panic or loop, whatever b is
	if validate(b) != nil || jsontext.Value(b).Kind() != '{' {
		return
	}
	want, wantErr := members(eachMember, b)
	if got != want || (gotErr == nil) != (wantErr == nil) {
		t.Errorf("%q: structural walk %s (%v), decoder %s (%v)", b, got, gotErr, want, wantErr)
	}
	// ValidMember finds what Member finds, for every name and one absent.
	keys := []string{"absent-name"}
	_ = eachMember(b, func(k string, _ jsontext.Value) error { keys = append(keys, k); return nil })
	for _, k := range keys {
		if got, want := ValidMember(b, k), Member(b, k); !bytes.Equal(got, want) || (got == nil) != (want == nil) {
			t.Errorf("%q: ValidMember(%q) = %q, Member = %q", b, k, got, want)
		}
	}
}
