package telemetry

import (
	"encoding/json"
	"strings"
	"testing"
)

// Review of 825b338: secretName refuses any name holding a space, so a
// name/value pair or [name, value] tuple whose name is a two-word label
// ("API Key", "Client Secret") is no longer redacted. Before 825b338,
// secretPair normalized the name (spaces dropped) and redacted these.
func TestSpacedCredentialNamesRedacted(t *testing.T) {
	for _, tt := range []struct{ args, secret string }{
		{`{"fields":[{"name":"API Key","value":"k3y-v4lue-1234"}]}`, "k3y-v4lue-1234"},
		{`{"fields":[{"name":"Client Secret","value":"cl1ent-s3cr3t-99"}]}`, "cl1ent-s3cr3t-99"},
		{`{"headers":[{"name":"Authorization ","value":"abc123xyz789"}]}`, "abc123xyz789"},
		{`{"headers":[["Access Token","t0k3n-v4lue-5678"]]}`, "t0k3n-v4lue-5678"},
	} {
		kept := Redactor{KeepArguments: true}.Arguments([]byte(tt.args))
		b, _ := json.Marshal(kept.Value)
		if strings.Contains(string(b), tt.secret) {
			t.Errorf("%s: kept arguments hold the secret %q: %s", tt.args, tt.secret, b)
		}
	}
}

// A password holding a quote, in JSON text nested in a string argument:
// the quoted-value scrubbers stop at the escaped quote inside the value
// and the rest of the password is kept.
