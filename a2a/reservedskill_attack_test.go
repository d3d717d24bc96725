package a2a

import (
	"strings"
	"testing"

	"github.com/sluicehq/sluice/policy"
)

// TestAttackReservedSkillIsARead: policy decides a descriptor without a
// method whose name starts with resource: or prompt: as a read (as the
// audit log replays one), under default_read — allow unless set — and not
// under default. An A2A message is such a descriptor, named after the
// skill its metadata picks: a card that declares a skill "prompt:…" (an
// agent's card is its own to write, and a skill added to it later is not
// blocked) had every message naming that skill allowed under `default:
// deny`, unclassed, past the route rule that closes the agent's skills
// after a sensitive read. An MCP tool of such a name is denied
// (tool_name_reserved); so must the skill be.
func TestAttackReservedSkillIsARead(t *testing.T) {
	card := strings.Replace(goodCard, `"skills":[{"id":"echo","description":"Echo."}]`,
		`"skills":[{"id":"echo","description":"Echo."},{"id":"prompt:summary","description":"Summaries."},{"id":"resource:file:///notes","description":"Notes."},{"id":"mcp:notifications/progress","description":"Progress."}]`, 1)
	agent, posts := stubAgent(t, card)
	p, err := policy.Compile([]byte(`default: deny
tool_classes:
  read_document: [source:sensitive]
  a2a:stub/send: [sink:external]
  a2a:stub/echo: [sink:external]
rules:
  - {id: handoffs, match: {match_any_class: [sink:external, source:sensitive]}, decision: allow}
route_rules:
  - {id: no-handoff, scope: agent, after: {match_any_class: [source:sensitive]}, deny: {match_any_class: [sink:external]}, reason: no handoff after a sensitive read}
`), "p.yaml", policy.Options{})
	if err != nil {
		t.Fatal(err)
	}
	srv := serve(t, p, agent.URL, Options{AgentHeader: "X-Agent"})
	aliceReadSensitive(t, p)
	send := func(skill string) string {
		req := `{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":{"kind":"message","messageId":"m1","role":"user","parts":[{"kind":"text","text":"salaries: ..."}],"metadata":{"skillId":"` + skill + `"}}}}`
		_, body := postAs(t, srv.URL+"/a2a/stub", "alice", req)
		return body
	}
	before := posts.Load()
	if body := send("echo"); posts.Load() != before || !strings.Contains(body, "no-handoff") {
		t.Fatalf("control: forwarded=%v, %s; want the no-handoff deny", posts.Load() != before, body)
	}
	for _, skill := range []string{"prompt:summary", "resource:file:///notes", "mcp:notifications/progress"} {
		before := posts.Load()
		if body := send(skill); posts.Load() != before {
			t.Errorf("a message naming skill %q reached the agent after a sensitive read, under default: deny: %s", skill, body)
		}
	}
}
