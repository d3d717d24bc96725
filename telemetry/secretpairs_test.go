package telemetry

import (
	"encoding/json"
	"strings"
	"testing"
)

// Credentials that sit where no key names them: a header or variable
// given as a name/value pair (HTTP tools, Kubernetes env lists), a
// signature or key in a URL's query, JSON text inside a JSON string
// inside a string. None of them may reach a record, kept or hashed.
func TestSecretsWithoutSecretKeys(t *testing.T) {
	for _, tt := range []struct{ name, args, secret string }{
		{"header pair", `{"url":"https://api.example/x","headers":[{"name":"Authorization","value":"hunter2-plain-value"}]}`, "hunter2-plain-value"},
		{"header pair, key spelling", `{"headers":[{"header":"X-Api-Key","value":"k3y-v4lue-1234"}]}`, "k3y-v4lue-1234"},
		{"env pair", `{"env":[{"name":"DB_PASSWORD","value":"correct horse"}]}`, "correct horse"},
		{"variable pair", `{"variables":[{"variable":"GITHUB_TOKEN","val":"plainsecretvalue9"}]}`, "plainsecretvalue9"},
		{"presigned URL", `{"url":"https://bucket.s3.amazonaws.com/f?X-Amz-Credential=AKIDEXAMPLE%2F20261126&X-Amz-Signature=abcdef0123456789abcdef"}`, "abcdef0123456789abcdef"},
		{"sig in query", `{"url":"https://x.blob.core.windows.net/c/b?sv=2024&sig=Zm9vYmFyYmF6cXV4MTIz"}`, "Zm9vYmFyYmF6cXV4MTIz"},
		{"key in query", `{"url":"https://maps.example/api?q=paris&key=plainMapsKey123456"}`, "plainMapsKey123456"},
		{"nested JSON text", `{"config":"{\"inner\":\"{\\\"password\\\":\\\"hunter2hunter2\\\"}\"}"}`, "hunter2hunter2"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			kept := Redactor{KeepArguments: true}.Arguments([]byte(tt.args))
			b, _ := json.Marshal(kept.Value)
			if strings.Contains(string(b), tt.secret) {
				t.Errorf("kept arguments hold the secret: %s", b)
			}
			// The hash is of the redacted form: the same secret-free
			// call with another secret hashes the same, on both paths.
			other := strings.ReplaceAll(tt.args, tt.secret, "another-secret-0000")
			h1 := Redactor{}.Arguments([]byte(tt.args)).SHA256
			h2 := Redactor{}.Arguments([]byte(other)).SHA256
			if h1 != h2 {
				t.Errorf("the hash changes with the secret: it was hashed, not redacted")
			}
			if h1 != kept.SHA256 {
				t.Errorf("hash paths disagree: %s (tokens) vs %s (decoded)", h1, kept.SHA256)
			}
		})
	}
	// Ordinary pairs and URLs stay as they are.
	for _, args := range []string{
		`{"headers":[{"name":"Accept","value":"application/json"}]}`,
		`{"env":[{"name":"LOG_LEVEL","value":"debug"}]}`,
		`{"url":"https://example.com/search?q=keyboards&page=2"}`,
	} {
		kept := Redactor{KeepArguments: true}.Arguments([]byte(args))
		b, _ := json.Marshal(kept.Value)
		if strings.Contains(string(b), Redacted) {
			t.Errorf("%s: redacted %s", args, b)
		}
	}
}
