package telemetry

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestAttackProviderKeysKept: credentials with nothing secret-sounding
// around them are found by their own shape; these common ones were not,
// and reached the record whole: an Azure Storage connection string's
// AccountKey (the key=value scrubber knows api, access and private keys,
// not an account's), and the prefixed tokens of GitLab, Hugging Face,
// npm, Google OAuth, SendGrid, Stripe webhooks and Slack's webhook URLs.
func TestAttackProviderKeysKept(t *testing.T) {
	for _, tt := range []struct{ name, text, secret string }{
		{"Azure AccountKey", "DefaultEndpointsProtocol=https;AccountName=acme;AccountKey=c2VjcmV0S2V5VmFsdWUxMjM0NTY3ODkw==;EndpointSuffix=core.windows.net", "c2VjcmV0S2V5VmFsdWUxMjM0NTY3ODkw"},
		{"GitLab", "GITLAB=glpat-Ab3dEf6hIj9kLm2nOp5q ok", "glpat-Ab3dEf6hIj9kLm2nOp5q"},
		{"Hugging Face", "use hf_AbCdEfGhIjKlMnOpQrStUvWxYzAbCdEfGh now", "hf_AbCdEfGhIjKlMnOpQrStUvWxYzAbCdEfGh"},
		{"npm", "//registry.npmjs.org/:_authToken npm_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789", "npm_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789"},
		{"Google OAuth", "GOOG ya29.a0AfH6SMBx3kLmNoPqRsTuVwXyZ0123456789abcdef", "a0AfH6SMBx3kLmNoPqRsTuVwXyZ0123456789abcdef"},
		{"SendGrid", "key SG.AbCdEfGhIjKlMnOpQrStUv.AbCdEfGhIjKlMnOpQrStUvWxYz0123456789AbCdEfG", "AbCdEfGhIjKlMnOpQrStUvWxYz0123456789AbCdEfG"},
		{"Stripe webhook", "whsec_AbCdEfGhIjKlMnOpQrStUvWxYz012345", "AbCdEfGhIjKlMnOpQrStUvWxYz012345"},
		{"Slack webhook", "post to https://hooks.slack.com/services/T0AAAAAAA/B0BBBBBBB/AbCdEfGhIjKlMnOpQrStUvWx", "AbCdEfGhIjKlMnOpQrStUvWx"},
	} {
		if got := Scrub(tt.text); strings.Contains(got, tt.secret) {
			t.Errorf("%s: Scrub(%q) = %q: the credential is kept", tt.name, tt.text, got)
		}
	}
	// As a member of the arguments too, on both hash paths.
	args := []byte(`{"storage":{"AccountName":"acme","AccountKey":"c2VjcmV0S2V5VmFsdWUxMjM0NTY3ODkw=="}}`)
	kept := Redactor{KeepArguments: true}.Arguments(args)
	if b, _ := json.Marshal(kept.Value); strings.Contains(string(b), "c2VjcmV0") {
		t.Errorf("kept arguments hold the AccountKey: %s", b)
	}
	other := []byte(strings.ReplaceAll(string(args), "c2VjcmV0S2V5VmFsdWUxMjM0NTY3ODkw", "another"))
	if h1, h2 := (Redactor{}).Arguments(args).SHA256, (Redactor{}).Arguments(other).SHA256; h1 != h2 || h1 != kept.SHA256 {
		t.Errorf("arguments_sha256 depends on the AccountKey")
	}
	for _, text := range []string{"the shelf holds 12 glasses", "https://hooks.slack.com/", "AccountName=acme;EndpointSuffix=core.windows.net"} {
		if got := Scrub(text); got != text {
			t.Errorf("Scrub(%q) = %q, want it unchanged", text, got)
		}
	}
}
