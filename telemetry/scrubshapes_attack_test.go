package telemetry

import (
	"strings"
	"testing"
)

// TestAttackScrubOtherShapes: credentials in text an upstream's error or
// a tool's output commonly carries, which Scrub left whole: an armored
// PGP private key ("PRIVATE KEY BLOCK", not PEM's "PRIVATE KEY"), a Ruby
// hash's inspect output (password=>"…", the arrow taken for "=" and the
// value for ">"), a JSON array of secrets ("password":["…"]), and a
// secret query parameter or header inside a percent-encoded URL or form
// value (access_token%3D…, Bearer%20…), as in an OAuth redirect_uri.
func TestAttackScrubOtherShapes(t *testing.T) {
	for _, tt := range []struct{ name, text, secret, kept string }{
		{"PGP private key", "-----BEGIN PGP PRIVATE KEY BLOCK-----\n\nlQOYBGXsecretmaterial\n-----END PGP PRIVATE KEY BLOCK-----\nafter", "lQOYBGXsecretmaterial", "after"},
		{"PGP private key cut off", "key: -----BEGIN PGP PRIVATE KEY BLOCK-----\nlQOYBGXsecretmaterial", "lQOYBGXsecretmaterial", "key:"},
		{"Ruby hash rocket", `ArgumentError: bad config {:user=>"ann", :password=>"hunter2hunter2"}`, "hunter2hunter2", `:user=>"ann"`},
		{"Ruby hash rocket string key", `{"api_key" => "abcdEFGH12345678"}`, "abcdEFGH12345678", `{"api_key"`},
		{"JSON array", `bad request {"password":["hunter2hunter2"]}`, "hunter2hunter2", "bad request"},
		{"encoded query", "redirect to https://app/cb?next=https%3A%2F%2Fy%2Fz%3Faccess_token%3Dsupersecretvalue123", "supersecretvalue123", "https://app/cb?next="},
		{"encoded header", "h=Authorization%3A%20Bearer%20abcdefghijklmnop", "abcdefghijklmnop", "h="},
		{"encoded bearer", "auth header Bearer%20abcdefghijklmnopqrst", "abcdefghijklmnopqrst", "auth header"},
	} {
		got := Scrub(tt.text)
		if strings.Contains(got, tt.secret) {
			t.Errorf("%s: Scrub(%q) = %q: the credential is kept", tt.name, tt.text, got)
		}
		if !strings.Contains(got, tt.kept) {
			t.Errorf("%s: Scrub(%q) = %q: lost %q", tt.name, tt.text, got, tt.kept)
		}
	}
	// Text that only looks like these keeps its words.
	for _, text := range []string{
		"-----BEGIN PGP PUBLIC KEY BLOCK-----\nmQINBGXpublic",
		"size%3D100%26page%3D2",
		"a => b",
		"cache hit rate 95%20 percent",
	} {
		if got := Scrub(text); got != text {
			t.Errorf("Scrub(%q) = %q, want it unchanged", text, got)
		}
	}
}

// TestAttackScrubEncodedJSON: JSON percent-encoded into a URL's query
// (?q={"password":"…"}), its quotes %22, kept the value: the key=value
// scrubber took a quote before the separator, not %22.
func TestAttackScrubEncodedJSON(t *testing.T) {
	for _, text := range []string{
		"GET /search?filter=%7B%22password%22%3A%22hunter2hunter2%22%7D",
		"GET /search?filter=%7B%22api_key%22:%22hunter2hunter2%22%7D",
		"q=%7B%27token%27%3A%20%27hunter2hunter2%27%7D",
	} {
		if got := Scrub(text); strings.Contains(got, "hunter2hunter2") || !strings.HasPrefix(got, text[:10]) {
			t.Errorf("Scrub(%q) = %q: the credential is kept", text, got)
		}
	}
}
