package telemetry

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestAttackAuthorizationSchemeKeptCredential: an Authorization header
// written out in text (a curl command a shell tool is given, a request
// an HTTP tool is asked to send) names its scheme before the credential.
// Bearer and Basic had scrubbers of their own; for every other scheme
// (GitHub's "token", Django REST framework's "Token", Discord's "Bot",
// Okta's "SSWS", "ApiKey", Proxy-Authorization alike) the key=value
// scrubber took the scheme for the value, redacted it, and kept the
// credential after it: the audit record held
// "Authorization: [REDACTED] 0123…" with keep_arguments, and hashed the
// credential into arguments_sha256 without.
func TestAttackAuthorizationSchemeKeptCredential(t *testing.T) {
	const secret = "9944b09199c62bcf9418ad846dd0e4bbdfc6ee4b"
	for _, tt := range []struct{ name, text string }{
		{"curl, GitHub token", `curl -H 'Authorization: token ` + secret + `' https://api.github.com/user`},
		{"DRF Token", `curl -H "Authorization: Token ` + secret + `" https://api.example/items`},
		{"Discord Bot", "Authorization: Bot " + secret},
		{"Okta SSWS", "authorization: SSWS " + secret},
		{"ApiKey scheme", `{"Authorization":"ApiKey ` + secret + `"}`},
		{"proxy", "Proxy-Authorization: Custom " + secret},
		{"equals", "authorization=Token " + secret + "&x=1"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := Scrub(tt.text); strings.Contains(got, secret) {
				t.Errorf("Scrub(%q) = %q: the credential after the scheme is kept", tt.text, got)
			}
			args, _ := json.Marshal(map[string]string{"command": tt.text})
			kept := Redactor{KeepArguments: true}.Arguments(args)
			b, _ := json.Marshal(kept.Value)
			if strings.Contains(string(b), secret) {
				t.Errorf("kept arguments hold the credential: %s", b)
			}
			other, _ := json.Marshal(map[string]string{"command": strings.ReplaceAll(tt.text, secret, "0000000000000000000000000000000000000000")})
			if h1, h2 := (Redactor{}).Arguments(args).SHA256, (Redactor{}).Arguments(other).SHA256; h1 != h2 || h1 != kept.SHA256 {
				t.Errorf("arguments_sha256 depends on the credential (%s vs %s, decoded %s): it was hashed, not redacted", h1, h2, kept.SHA256)
			}
		})
	}
	// Prose and a scheme alone keep their words; bearer stays redacted.
	for text, want := range map[string]string{
		"Authorization: Bearer abcdefghijklmnop": "Authorization: " + Redacted,
		"no authorization needed here":           "no authorization needed here",
	} {
		if got := Scrub(text); !strings.HasPrefix(got, want) {
			t.Errorf("Scrub(%q) = %q, want it to start %q", text, got, want)
		}
	}
}
