package telemetry

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestAttackCommandLineCredentials: a shell tool's command names its
// credentials as options, --token VALUE and curl's -u USER:PASSWORD,
// separated by a space rather than = or :, so no scrubber saw a pair:
// `kubectl --token eyJ…`-less tokens, `docker login --password …`,
// `curl -u admin:…` reached the record whole with keep_arguments and
// were hashed into arguments_sha256 without it.
func TestAttackCommandLineCredentials(t *testing.T) {
	const secret = "Zx8pQ2mN7vR4tL9k"
	for _, tt := range []struct{ name, text string }{
		{"kubectl --token", "kubectl --token " + secret + " get pods"},
		{"docker login --password", "docker login -u ci --password " + secret + " registry.example"},
		{"quoted", `vault write auth/x --client-secret "` + secret + `"`},
		{"--api-key", "tool --api-key " + secret},
		{"curl -u", "curl -u admin:" + secret + " https://api.example/x"},
		{"curl --user", "curl --user 'admin:" + secret + "' https://api.example/x"},
		{"curl -u glued", "curl -uadmin:" + secret + " https://api.example/x"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := Scrub(tt.text); strings.Contains(got, secret) {
				t.Errorf("Scrub(%q) = %q: the credential is kept", tt.text, got)
			}
			args, _ := json.Marshal(map[string]string{"command": tt.text})
			kept := Redactor{KeepArguments: true}.Arguments(args)
			b, _ := json.Marshal(kept.Value)
			if strings.Contains(string(b), secret) {
				t.Errorf("kept arguments hold the credential: %s", b)
			}
			other, _ := json.Marshal(map[string]string{"command": strings.ReplaceAll(tt.text, secret, "0000000000000000")})
			if h1, h2 := (Redactor{}).Arguments(args).SHA256, (Redactor{}).Arguments(other).SHA256; h1 != h2 || h1 != kept.SHA256 {
				t.Errorf("arguments_sha256 depends on the credential (%s vs %s, decoded %s)", h1, h2, kept.SHA256)
			}
		})
	}
	// Options without a credential keep their values, those naming counts
	// of tokens too (notSecret, as the keys max_tokens and tokens are).
	for _, text := range []string{"ls -u", "git log --user-agent x", "grep -r token src/", "docker run -v /a:/b img",
		"llm --max-tokens 100 -m gpt", "--max-output-tokens 2048", "run --tokens 5", "--token-limit 8000",
		// and those naming where or which the credential is, not it.
		"aws secretsmanager get-secret-value --secret-id prod/db", "docker login --password-stdin registry.example",
		"kubectl --token-file /run/sa/token get pods", "gcloud --secret-name api-key"} {
		if got := Scrub(text); got != text {
			t.Errorf("Scrub(%q) = %q, want it unchanged", text, got)
		}
	}
}
