package telemetry

import (
	"encoding/json"
	"testing"
)

// FuzzArguments feeds arbitrary tool arguments, untrusted bytes from an
// agent, to the redactor: it must not panic, must always produce a hash,
// and must never keep a value under a secret-looking key.
func FuzzArguments(f *testing.F) {
	for _, s := range []string{
		`{"a":1}`, `{"token":"x","n":{"password":"y"}}`, `[{"api_key":"k"}]`, `"str"`, `null`, `{"a":`,
		`{"Authorization":"Bearer abcdefghijkl","list":[1,2.5e300,-0,"sk-abcdefghijklmnopqrst"]}`, "\xff\xfe",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		a := Redactor{KeepArguments: true}.Arguments(raw)
		if len(raw) > 0 && len(a.SHA256) != 64 && json.Valid(raw) {
			t.Fatalf("no hash for %q", raw)
		}
		var walk func(v any)
		walk = func(v any) {
			switch v := v.(type) {
			case map[string]any:
				for k, x := range v {
					if IsSecretKey(k) && x != Redacted {
						t.Fatalf("secret key %q kept value %v", k, x)
					}
					walk(x)
				}
			case []any:
				for _, x := range v {
					walk(x)
				}
			}
		}
		walk(a.Value)
	})
}

// FuzzScrub checks that scrubbing never panics and that scrubbed text
// stays scrubbed.
func FuzzScrub(f *testing.F) {
	for _, s := range []string{
		"Authorization: Bearer abcdefghijklmnop", "password=hunter2", "AKIAIOSFODNN7EXAMPLE",
		"-----BEGIN PRIVATE KEY-----\nabc", "https://u:p@h/", "plain text",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		once := Scrub(s)
		if twice := Scrub(once); twice != once {
			t.Fatalf("Scrub is not stable:\n in  %q\n 1st %q\n 2nd %q", s, once, twice)
		}
	})
}
