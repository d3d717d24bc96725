package telemetry

import (
	"bytes"
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

// FuzzArgumentsHash checks that the hash every call computes from the
// argument tokens (hashArguments) is the one the decoding path gives,
// which replay and KeepArguments use, whenever the token path answers.
func FuzzArgumentsHash(f *testing.F) {
	for _, s := range []string{
		`{"a":1}`, `{"token":"x","n":{"password":"y"}}`, `[{"api_key":"k"}]`, `"str"`, `null`, `true`, `{"a":`,
		`{"Authorization":"Bearer abcdefghijkl","list":[1,2.5e300,-0,"sk-abcdefghijklmnopqrst"]}`, "\xff\xfe",
		`{"b":1,"a":2,"\u00e9":3,"\ud83d\ude00":4,"\uffff":5}`, `{"n":12345678901234567890,"f":1e-7,"g":1E21,"h":-1.50}`,
		`{"a":1,"a":2}`, `{"a":1} {"b":2}`, `{"a":1}  `, `{"s":"line\nbreak\u0001\"q\"\\"}`, `{"x":1e400}`,
		`{"my_secret_field":{"nested":[1,2]},"keep":"v","MaxTokens":5}`, `[]`, `{}`, `[[],[{}]]`,
		`{"url":"https://user:hunter22@example.com/x","k":"AKIAIOSFODNN7EXAMPLE"}`,
		`{"message":"hi"}`, `{"b":true,"a":null,"c":"sk-abcdefghijklmnopqrstuv","token":false}`, `{"name":"api_key","value":"v"}`,
		`{"a":"x","a":"y"}`, `{"a":"x",}`, `{"Z":"1","z":"2","_":"3"}`,
	} {
		f.Add([]byte(s), "")
		f.Add([]byte(s), "keep")
	}
	f.Fuzz(func(t *testing.T, raw []byte, extra string) {
		r := Redactor{}
		if extra != "" {
			r.SecretKeys = []string{extra}
		}
		raw = bytes.TrimSpace(raw)
		fast, ok := hashArguments(raw, r.extraKeys())
		if !ok {
			return
		}
		slow := Redactor{KeepArguments: true, SecretKeys: r.SecretKeys}.Arguments(raw).SHA256
		if fast != slow {
			t.Fatalf("hash of %q (extra key %q): token path %s, decoding path %s", raw, extra, fast, slow)
		}
	})
}
