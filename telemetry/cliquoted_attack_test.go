package telemetry

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestAttackCommandLineQuotedCredential: a credential option's quoted
// value is redacted to its closing quote. Only its first word was: a
// passphrase given as --passphrase 'correct horse battery staple', or
// a secret with a space, kept every word after the first in the record
// (with keep_arguments) and in arguments_sha256 without it.
func TestAttackCommandLineQuotedCredential(t *testing.T) {
	for _, tt := range []struct{ name, text, rest string }{
		{"single quotes", "gpg --batch --passphrase 'correct horse battery staple' -d f.gpg", "horse battery staple"},
		{"double quotes", `vault write auth/x --client-secret "Zx8p Q2mN7v R4tL9k"`, "Q2mN7v R4tL9k"},
		{"--password", `mysql --password "pa ss wo rd" -h db`, "ss wo rd"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := Scrub(tt.text)
			if strings.Contains(got, tt.rest) {
				t.Errorf("Scrub(%q) = %q: the credential's words after the first are kept", tt.text, got)
			}
			if !strings.Contains(got, Redacted) {
				t.Errorf("Scrub(%q) = %q: nothing redacted", tt.text, got)
			}
			args, _ := json.Marshal(map[string]string{"command": tt.text})
			kept := Redactor{KeepArguments: true}.Arguments(args)
			b, _ := json.Marshal(kept.Value)
			if strings.Contains(string(b), tt.rest) {
				t.Errorf("kept arguments hold the credential: %s", b)
			}
			other, _ := json.Marshal(map[string]string{"command": strings.ReplaceAll(tt.text, tt.rest, strings.Repeat("0", len(tt.rest)))})
			if h1, h2 := (Redactor{}).Arguments(args).SHA256, (Redactor{}).Arguments(other).SHA256; h1 != h2 {
				t.Errorf("arguments_sha256 depends on the credential (%s vs %s)", h1, h2)
			}
		})
	}
	// What follows the closing quote is kept.
	text := `gpg --passphrase 'a b' -d secrets.gpg`
	if got, want := Scrub(text), `gpg --passphrase '`+Redacted+`' -d secrets.gpg`; got != want {
		t.Errorf("Scrub(%q) = %q, want %q", text, got, want)
	}
}
