package telemetry

import (
	"encoding/json"
	"strings"
	"testing"
)

// The tests in this file were written by an attacker review of what
// Sluice records; each failed before its fix.

// keptArgs returns the JSON of what keep_arguments stores for raw.
func keptArgs(t *testing.T, raw string) string {
	t.Helper()
	a := Redactor{KeepArguments: true}.Arguments([]byte(raw))
	b, err := json.Marshal(a.Value)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// Keys that plainly name a credential but contain none of the secret
// fragments, and are not one of the whole-key names.
func TestSecretKeySpellings(t *testing.T) {
	for _, k := range []string{"auth_key", "authKey", "db_pwd", "dbPass", "ssh_key", "basic_auth", "mfa_otp", "pin_code", "X-Amz-Signature"} {
		raw := `{"` + k + `":"Zq9hunter2Zq9"}`
		if got := keptArgs(t, raw); strings.Contains(got, "hunter2") {
			t.Errorf("key %q: kept %s", k, got)
		}
	}
}

// The resource URI of a resources/read goes into the span attribute
// mcp.resource.uri as the agent sent it.
func TestSpanResourceURIUnscrubbed(t *testing.T) {
	c := Call{Method: "resources/read", ResourceURI: "https://svc:PW-3c2b1a0f9e@files.internal/r?access_token=TOK-8d7c6b5a4f"}
	for _, a := range c.Attrs() {
		if s, _ := a.Value.(string); strings.Contains(s, "PW-3c2b1a0f9e") || strings.Contains(s, "TOK-8d7c6b5a4f") {
			t.Errorf("span attribute %s = %s", a.Key, s)
		}
	}
}

// A password with spaces or punctuation in key=value text keeps all but
// its first word.
func TestScrubPasswordWithSpaces(t *testing.T) {
	for _, s := range []string{
		`connect with password: "correct horse battery staple"`,
		`{"password": "p,assw0rd-tail"}`,
		`DB_PASSWORD='abc def ghi'`,
	} {
		got := Scrub(s)
		for _, leak := range []string{"horse", "assw0rd-tail", "def ghi"} {
			if strings.Contains(got, leak) {
				t.Errorf("Scrub(%q) = %q", s, got)
			}
		}
	}
}
