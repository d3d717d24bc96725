package telemetry

import (
	"strings"
	"testing"
)

// TestScrubBearerPercentEncoded: a bearer token in a URL or form is
// percent-encoded as a whole, its + / = as %2B %2F %3D too; the scrubber
// took the token to its first escape and kept the rest.
func TestScrubBearerPercentEncoded(t *testing.T) {
	text := "GET /cb?auth=Bearer%20abcdefghij%2Bklmnopq%2Frstuvw%3D%3D&next=1"
	once := Scrub(text)
	for _, part := range []string{"klmnopq", "rstuvw"} {
		if strings.Contains(once, part) {
			t.Errorf("Scrub(%q) = %q: holds %q", text, once, part)
		}
	}
	if !strings.Contains(once, "&next=1") {
		t.Errorf("Scrub(%q) = %q: want &next=1 kept", text, once)
	}
	if twice := Scrub(once); twice != once {
		t.Errorf("Scrub not stable: %q, then %q", once, twice)
	}
}
