package intercept

import (
	"context"
	"testing"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

type softDenier struct{}

func (softDenier) Decide(context.Context, *ActionDescriptor) (Decision, error) {
	return Decision{Verdict: Deny, Reason: "rule_deny", PublicReason: "keys stay here", Mode: ModeToolResult}, nil
}

// TestSoftDenyToolWithOutputSchema: a tool whose listing declares an
// outputSchema is denied with throw mode's JSON-RPC error, not a soft
// deny. The envelope in a soft deny's structuredContent cannot match the
// tool's schema, and a client that validates it (the official TypeScript
// SDK does, isError or not) threw "Structured content does not match the
// tool's output schema" in place of the reason: every deny and held call
// of @modelcontextprotocol/server-filesystem under
// examples/desktop/sluice.yaml read so. A tool without one keeps the soft
// deny.
func TestSoftDenyToolWithOutputSchema(t *testing.T) {
	i := &Interceptor{Decider: softDenier{}}
	i.ObserveTools("fs", jsontext.Value(`{"tools":[{"name":"read_text_file","inputSchema":{"type":"object"},"outputSchema":{"type":"object","properties":{"content":{"type":"string"}},"required":["content"],"additionalProperties":false}},{"name":"plain","inputSchema":{"type":"object"}}]}`))
	cc := CallContext{Upstream: "fs", Agent: "a"}
	for _, c := range []struct {
		tool      string
		wantThrow bool
	}{{"read_text_file", true}, {"plain", false}} {
		m := mustDecode(t, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"`+c.tool+`","arguments":{"path":"/x/.ssh/id"}}}`)
		reply, forward := i.Check(context.Background(), m, cc)
		if forward {
			t.Fatalf("%s: forwarded", c.tool)
		}
		var got struct {
			Result *struct {
				StructuredContent jsontext.Value `json:"structuredContent"`
			} `json:"result"`
			Error *struct {
				Code    int    `json:"code"`
				Message string `json:"message"`
			} `json:"error"`
		}
		if err := json.Unmarshal(reply, &got); err != nil {
			t.Fatal(err)
		}
		switch {
		case c.wantThrow && (got.Error == nil || got.Error.Code != CodePolicyDenied || got.Error.Message != "keys stay here"):
			t.Errorf("%s (outputSchema): got %s, want JSON-RPC error %d with the reason", c.tool, reply, CodePolicyDenied)
		case !c.wantThrow && (got.Result == nil || len(got.Result.StructuredContent) == 0):
			t.Errorf("%s (no outputSchema): got %s, want the soft deny", c.tool, reply)
		}
	}
}
