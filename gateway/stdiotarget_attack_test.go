package gateway

import (
	"strings"
	"testing"
)

// TestAttackStdioTargetFlagCredentials: a stdio upstream's target, which
// every call's descriptor carries into policy, the classifier (an LLM
// provider too) and each event's target_endpoint, is its command line
// scrubbed. A credential given as a flag and a separate argument
// (--api-key VALUE, as servers' READMEs write it) was kept: only
// --api-key=VALUE was scrubbed (telemetry's option scrubber, 56d14f4).
func TestAttackStdioTargetFlagCredentials(t *testing.T) {
	u := &Upstream{Name: "x", Command: "npx", Args: []string{"-y", "@acme/mcp-server", "--api-key", "sk_acme_Zx8pQ2mN7vR4", "--client-secret", "cs-Qw3rTy7uI9", "--token=tok-As5dF8"}}
	got := u.describe()
	for _, s := range []string{"sk_acme_Zx8pQ2mN7vR4", "cs-Qw3rTy7uI9", "tok-As5dF8"} {
		if strings.Contains(got, s) {
			t.Errorf("target %q holds the credential %s", got, s)
		}
	}
	if !strings.HasPrefix(got, "stdio:npx -y @acme/mcp-server --api-key ") {
		t.Errorf("target %q: want the command and the flags' names kept", got)
	}
}
