package e2e

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/gateway"
	"github.com/sluicehq/sluice/intercept"
)

// TestDenyTaskAugmentedCall makes a task-augmented call (params.task, the
// TypeScript SDK's experimental.tasks.callToolStream) of server-everything's
// simulate-research-query, a tool that requires a task, which policy denies
// or holds. The SDK expects a CreateTaskResult or a JSON-RPC error; a soft
// deny's CallToolResult is neither, and the client reported a schema error
// ("expected object" at path task) in place of the reason. The denial must
// reach it as an error carrying the reason, in both result modes.
func TestDenyTaskAugmentedCall(t *testing.T) {
	requireNode(t)
	httpURL := startServer(t, "streamableHttp")
	for _, mode := range []intercept.ResultMode{intercept.ModeToolResult, intercept.ModeThrow} {
		for _, hold := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s hold=%v", mode, hold), func(t *testing.T) {
				dec := &intercept.StaticDecider{Default: intercept.Allow, Deny: []string{"simulate-research-query"}, Mode: mode}
				code, reason := intercept.CodePolicyDenied, "calling simulate-research-query is not allowed by policy"
				if hold {
					dec.Deny, dec.Approval = nil, dec.Deny
					code, reason = intercept.CodeApprovalRequired, "calling simulate-research-query needs a human's approval"
				}
				gw := startGateway(t, dec, gateway.Upstream{Name: "http", URL: httpURL})
				out := runClient(t, "--transport", "streamable-http", "--url", gw+"/mcp/http", "--scenario", "deny", "--task",
					"--tool", "simulate-research-query", "--tool-args", `{"topic":"x"}`)
				b, _ := json.Marshal(out)
				call, _ := out["steps"].(map[string]any)["call"].(map[string]any)
				e, _ := call["error"].(map[string]any)
				if call["ok"] != false || e["kind"] != "mcp" || e["code"] != float64(code) || !strings.Contains(fmt.Sprint(e["message"]), reason) {
					t.Errorf("task-augmented call %s: got %s, want an McpError %d with the reason %q", mode, b, code, reason)
				}
			})
		}
	}
}
