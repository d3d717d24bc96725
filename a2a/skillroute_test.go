package a2a

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/sluicehq/sluice/intercept"
	"github.com/sluicehq/sluice/policy"
)

// TestUndeclaredSkillEscapesRouteRule (found by an attacker review): the README classifies an agent's
// messages per skill (a2a:research/send for a message naming none, and
// each skill of its card). The skill is metadata.skillId, which the client
// chooses and the agent need not heed: a message naming a skill the card
// does not declare gets no class, so the route rule that denies
// sink:external after a sensitive read does not see it, and it reaches
// the agent.
func TestUndeclaredSkillEscapesRouteRule(t *testing.T) {
	agent, posts := stubAgent(t, goodCard)
	p, err := policy.Compile([]byte(`default: allow
tool_classes:
  read_document: [source:sensitive]
  a2a:stub/send: [sink:external]
  a2a:stub/echo: [sink:external]
route_rules:
  - {id: no-handoff, scope: agent, after: {match_any_class: [source:sensitive]}, deny: {match_any_class: [sink:external]}, reason: no handoff after a sensitive read}
`), "p.yaml", policy.Options{})
	if err != nil {
		t.Fatal(err)
	}
	srv := serve(t, p, agent.URL, Options{AgentHeader: "X-Agent"})
	// alice read a sensitive document over MCP.
	aliceReadSensitive(t, p)
	send := func(meta string) string {
		req := `{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":{"kind":"message","messageId":"m1","role":"user","parts":[{"kind":"text","text":"salaries: ..."}]` + meta + `}}}`
		_, body := postAs(t, srv.URL+"/a2a/stub", "alice", req)
		return body
	}
	for _, meta := range []string{``, `,"metadata":{"skillId":"echo"}`} {
		before := posts.Load()
		if body := send(meta); posts.Load() != before || !strings.Contains(body, "no-handoff") {
			t.Fatalf("control %q: forwarded=%v, %s; want the no-handoff deny", meta, posts.Load() != before, body)
		}
	}
	before := posts.Load()
	body := send(`,"metadata":{"skillId":"not-on-the-card"}`)
	if posts.Load() != before {
		t.Errorf("a message naming an undeclared skill reached the agent after a sensitive read: %s", body)
	}
}

func postAs(t *testing.T, url, agent, body string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Agent", agent)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// aliceReadSensitive has alice read docs' read_document, a sensitive
// source under p, over MCP: decided, allowed and remembered.
func aliceReadSensitive(t *testing.T, p *policy.Policy) {
	t.Helper()
	ctx := context.Background()
	src := &intercept.ActionDescriptor{TxnID: "t", Upstream: "docs", ToolName: "read_document", Agent: "alice", SessionID: "s1", Parameters: jsontext.Value(`{}`)}
	if dec := intercept.Decide(ctx, p, src); dec.Verdict != intercept.Allow {
		t.Fatalf("source: %+v", dec)
	}
	if err := p.Forwarded(ctx, src, intercept.Decision{Verdict: intercept.Allow}); err != nil {
		t.Fatal(err)
	}
}
