package a2a

import (
	"strings"
	"testing"

	"github.com/sluicehq/sluice/policy"
)

// TestAttackMessageNamesTwoSkills: a message names its skill in
// metadata.skillId, or metadata.skill (the gateway reads either, as
// agents do). A message naming both, differently, was decided under
// skillId while an agent that reads skill ran the other: {"skillId":
// "echo", "skill": "wire"} passed as echo after a sensitive read, past
// the route rule that closes wire, and reached the agent; so did a
// skillId that is not a string, beside a skill naming echo.
func TestAttackMessageNamesTwoSkills(t *testing.T) {
	card := strings.Replace(goodCard, `"skills":[{"id":"echo","description":"Echo."}]`,
		`"skills":[{"id":"echo","description":"Echo."},{"id":"wire","description":"Sends money."}]`, 1)
	agent, posts := stubAgent(t, card)
	p, err := policy.Compile([]byte(`default: allow
tool_classes:
  read_document: [source:sensitive]
  a2a:stub/wire: [sink:external]
route_rules:
  - {id: no-wire, scope: agent, after: {match_any_class: [source:sensitive]}, deny: {match_any_class: [sink:external]}, reason: no wire after a sensitive read}
`), "p.yaml", policy.Options{})
	if err != nil {
		t.Fatal(err)
	}
	srv := serve(t, p, agent.URL, Options{AgentHeader: "X-Agent"})
	aliceReadSensitive(t, p)
	send := func(meta string) string {
		req := `{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":{"kind":"message","messageId":"m1","role":"user","parts":[{"kind":"text","text":"pay 1000"}],"metadata":` + meta + `}}}`
		_, body := postAs(t, srv.URL+"/a2a/stub", "alice", req)
		return body
	}
	for _, meta := range []string{`{"skill":"wire"}`, `{"skillId":"wire"}`} {
		before := posts.Load()
		if body := send(meta); posts.Load() != before || !strings.Contains(body, "no-wire") {
			t.Fatalf("control %s: forwarded=%v, %s; want the no-wire deny", meta, posts.Load() != before, body)
		}
	}
	before := posts.Load()
	if body := send(`{"skill":"echo","skillId":"echo"}`); posts.Load() == before {
		t.Fatalf("both naming echo: not forwarded: %s", body)
	}
	for _, meta := range []string{`{"skillId":"echo","skill":"wire"}`, `{"skill":"wire","skillId":"echo"}`,
		`{"skillId":["wire"],"skill":"echo"}`, `{"skillId":"echo","skill":{"id":"wire"}}`} {
		before := posts.Load()
		if body := send(meta); posts.Load() != before {
			t.Errorf("metadata %s reached the agent after a sensitive read: %s", meta, body)
		}
	}
}
