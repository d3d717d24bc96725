package intercept

import (
	"context"
	"testing"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

type softDenier struct{}

func (softDenier) Decide(context.Context, *ActionDescriptor) (Decision, error) {
	return Decision{Verdict: Deny, Reason: "rule_deny", PublicReason: "keys stay here", Mode: ModeToolResult}, nil
}

// TestSoftDenyToolWithOutputSchema: a soft deny of a tool whose listing
// declares an outputSchema carries no structuredContent. The envelope
// there cannot match the tool's schema, and a client that validates it
// (the official TypeScript SDK does, isError or not) threw "Structured
// content does not match the tool's output schema" in place of the
// reason: every deny and held call of
// @modelcontextprotocol/server-filesystem under
// examples/desktop/sluice.yaml read so. It stays a tool result the model
// reads (isError, the reason as text); a tool without an outputSchema
// keeps the envelope.
func TestSoftDenyToolWithOutputSchema(t *testing.T) {
	i := &Interceptor{Decider: softDenier{}}
	i.ObserveTools("fs", jsontext.Value(`{"tools":[{"name":"read_text_file","inputSchema":{"type":"object"},"outputSchema":{"type":"object","properties":{"content":{"type":"string"}},"required":["content"],"additionalProperties":false}},{"name":"plain","inputSchema":{"type":"object"}}]}`))
	cc := CallContext{Upstream: "fs", Agent: "a"}
	for _, c := range []struct {
		tool           string
		wantStructured bool
	}{{"read_text_file", false}, {"plain", true}} {
		m := mustDecode(t, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"`+c.tool+`","arguments":{"path":"/x/.ssh/id"}}}`)
		reply, forward := i.Check(context.Background(), m, cc)
		if forward {
			t.Fatalf("%s: forwarded", c.tool)
		}
		var got struct {
			Result *struct {
				Content []struct {
					Text string `json:"text"`
				} `json:"content"`
				IsError           bool           `json:"isError"`
				StructuredContent jsontext.Value `json:"structuredContent"`
			} `json:"result"`
		}
		if err := json.Unmarshal(reply, &got); err != nil {
			t.Fatal(err)
		}
		switch r := got.Result; {
		case r == nil || !r.IsError || len(r.Content) != 1 || r.Content[0].Text != "keys stay here":
			t.Errorf("%s: got %s, want a soft deny (isError) whose text is the reason", c.tool, reply)
		case c.wantStructured != (len(r.StructuredContent) > 0):
			t.Errorf("%s: got %s, want structuredContent %v", c.tool, reply, c.wantStructured)
		}
	}
}

// TestSoftDenyToolWithOutputSchemaKeepsData: without structuredContent, a
// hold's approval id and a rate limit's retry hint are in the text.
func TestSoftDenyToolWithOutputSchemaKeepsData(t *testing.T) {
	for _, c := range []struct {
		dec  Decision
		want string
	}{
		{Decision{Verdict: RequireApproval, Reason: "approval_required", PublicReason: "needs a human", ApprovalID: "apr_1", Mode: ModeToolResult}, "needs a human (approval_id apr_1)"},
		{Decision{Verdict: Deny, Reason: "rate_limited", PublicReason: "slow down", RetryAfter: 1500 * time.Millisecond, Mode: ModeToolResult}, "slow down (retry after 1500 ms)"},
	} {
		var got struct {
			Result struct {
				Content []struct {
					Text string `json:"text"`
				} `json:"content"`
			} `json:"result"`
		}
		reply := renderDecision(jsontext.Value("1"), c.dec, "t", "2025-11-25", false)
		if err := json.Unmarshal(reply, &got); err != nil || len(got.Result.Content) != 1 || got.Result.Content[0].Text != c.want {
			t.Errorf("got %s, want the text %q", reply, c.want)
		}
	}
}
