package intercept

import (
	"strings"
	"testing"

	"github.com/sluicehq/sluice/telemetry"
)

// TestNewEnvelopeBoundsNames: every transport's deny (MCP's soft deny and
// throw, A2A's) quotes the tool name, the agent's to choose, bounded as
// events do: a 4 MiB name was answered five times over.
func TestNewEnvelopeBoundsNames(t *testing.T) {
	name := strings.Repeat("x", 1<<20)
	env := NewEnvelope(Decision{Verdict: Deny, Reason: "static_default", PublicReason: "calling " + name + " is not allowed",
		Evidence: Evidence{MatchedToolName: name}})
	if n := len(env.PublicReason); n > telemetry.MaxRecordedText || !strings.HasPrefix(env.PublicReason, "calling xxx") || !strings.Contains(env.PublicReason, telemetry.CutMark) {
		t.Errorf("public reason of %d bytes: %.100q", n, env.PublicReason)
	}
	if env.Evidence == nil || len(env.Evidence.MatchedToolName) > telemetry.MaxRecordedName {
		t.Errorf("evidence: %+v", env.Evidence)
	}
	if short := NewEnvelope(Decision{Verdict: Deny, Reason: "r", PublicReason: "calling echo is not allowed"}); short.PublicReason != "calling echo is not allowed" {
		t.Errorf("a short reason changed: %q", short.PublicReason)
	}
}
