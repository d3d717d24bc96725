package govern

import (
	"context"
	"testing"

	"github.com/sluicehq/sluice/intercept"
)

type blockAll struct{}

func (blockAll) Blocked(string, string) (string, bool) {
	return "pinning: not in the pinned inventory", true
}

// Inventory drift and pinning are about tools: a resource or prompt read
// goes to the policy even when every tool of its upstream is blocked (a
// strict pin would otherwise block every read as an unknown tool).
func TestDriftGateLeavesReadsToPolicy(t *testing.T) {
	g := &DriftGate{Next: &intercept.StaticDecider{Default: intercept.Allow}, Inventory: blockAll{}}
	for _, tt := range []struct {
		d    intercept.ActionDescriptor
		want intercept.Verdict
	}{
		{intercept.ActionDescriptor{Method: "tools/call", ToolName: "echo"}, intercept.Deny},
		{intercept.ActionDescriptor{ToolName: "echo"}, intercept.Deny},
		{intercept.ActionDescriptor{Method: "resources/read", ToolName: "resource:file:///a"}, intercept.Allow},
		{intercept.ActionDescriptor{Method: "prompts/get", ToolName: "prompt:p"}, intercept.Allow},
	} {
		if got := intercept.Decide(context.Background(), g, &tt.d); got.Verdict != tt.want {
			t.Errorf("%s %s: got %s/%s, want %s", tt.d.Method, tt.d.ToolName, got.Verdict, got.Reason, tt.want)
		}
	}
}
