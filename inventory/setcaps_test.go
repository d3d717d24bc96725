package inventory

import (
	"strings"
	"testing"

	"github.com/go-json-experiment/json/jsontext"
)

// TestSetCapabilities: the capabilities SetCapabilities makes of a
// capability set have that set, or with the extensions as one word the
// set with its extensions so.
func TestSetCapabilities(t *testing.T) {
	for _, caps := range []string{
		`{}`,
		`{"sampling":{}}`,
		`{"roots":true}`,
		allCaps,
		`{"experimental":{"big":"xxxxxxxx"},"elicitation":{"form":{},"url":{"x":1}}}`,
		`{"tasks":{"list":{},"cancel":{},"requests":{"sampling":{"createMessage":{}}}},"roots":{"listChanged":true}}`,
		`{"extensions":{"io.modelcontextprotocol/ui":{"mimeTypes":["text/html"]},"off":false,"":{}}}`,
		`{"extensions":{"a,b":{}},"sampling":{"tools":{}}}`,
		`{"extensions":{"a":{},"b":{},"c":{},"d":{},"e":{},"f":{},"g":{},"h":{},"i":{}}}`,
		`{"elicitation":{},"extensions":{"` + strings.Repeat("x", 129) + `":{}}}`,
	} {
		set := CapabilitySet(jsontext.Value(caps))
		if got := CapabilitySet(SetCapabilities(set, false)); got != set {
			t.Errorf("CapabilitySet(SetCapabilities(%q)) = %q (%s), want the set", set, got, SetCapabilities(set, false))
		}
		var want []string
		ext := false
		for w := range strings.SplitSeq(set, ",") {
			switch {
			case strings.HasPrefix(w, "extensions"):
				if !ext {
					want = append(want, "extensions")
				}
				ext = true
			case w != "":
				want = append(want, w)
			}
		}
		if got := CapabilitySet(SetCapabilities(set, true)); got != strings.Join(want, ",") {
			t.Errorf("CapabilitySet(SetCapabilities(%q, true)) = %q, want %q", set, got, strings.Join(want, ","))
		}
	}
}
