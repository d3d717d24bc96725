package intercept

import (
	"testing"

	"github.com/go-json-experiment/json/jsontext"
)

// TestReadMetaUnreadable: a _meta that cannot be read to its end, in a
// message Decode did not make, is beyond the protocol's, as
// metaBeyondProtocol took it: CallExtra carries it rather than dropping
// it unread.
func TestReadMetaUnreadable(t *testing.T) {
	for _, meta := range []string{
		`{"progressToken":1,"x`,
		`{"progressToken":1,`,
		`{"progressToken":1 "note":"x"}`,
	} {
		m := &Message{Meta: jsontext.Value(meta)}
		if !metaBeyondProtocol(m.Meta) {
			t.Fatalf("%s: metaBeyondProtocol = false", meta)
		}
		if !m.metaFacts().beyond {
			t.Errorf("%s: beyond = false, want true, as metaBeyondProtocol", meta)
		}
	}
}
