package telemetry

import (
	"strings"
	"testing"
)

// TestAttackDigestAuthorizationKept: an Authorization header of the
// Digest scheme written out in text (a curl command, a log line, JSON
// text nested in a string) kept its response, the hash of the password
// with the nonce and the request: beside the realm and nonce, a password
// to guess offline and a request to replay while the nonce holds.
func TestAttackDigestAuthorizationKept(t *testing.T) {
	const hash = "6629fae49393a05397450978507c4ef1"
	for _, s := range []string{
		`Authorization: Digest username="bob", realm="x", nonce="abc", uri="/", response="` + hash + `"`,
		`curl -H 'Authorization: Digest username="bob", response="` + hash + `"' http://x`,
		`{"cmd":"curl -H \"Authorization: Digest username=\\\"bob\\\", response=\\\"` + hash + `\\\"\" http://x"}`,
		`authorization: digest username=bob, response=` + hash,
	} {
		if got := Scrub(s); strings.Contains(got, hash) {
			t.Errorf("Scrub(%q) = %q: the digest response kept", s, got)
		}
	}
	// Prose about digests keeps its words and hex.
	for _, s := range []string{
		"the digest of the response is " + hash,
		"sha256 digest " + hash + " matches",
	} {
		if got := Scrub(s); got != s {
			t.Errorf("Scrub(%q) = %q, want it unchanged", s, got)
		}
	}
}
