package approval

import (
	"context"
	"strings"
	"testing"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/sluicehq/sluice/intercept"
	"github.com/sluicehq/sluice/telemetry"
)

// TestHistoryNamesCutAsEventsCutThem: the audit events of one held call
// name its tool, session and agent as telemetry.BoundName cuts them (a
// prefix, the length and the SHA-256 of the whole), the held one and the
// decided one alike. A finished request kept its names cut its own way
// (a prefix and the length), so the event of its end named the tool
// otherwise than the event of its hold and every decision event did, and
// a query by the recorded name missed it.
func TestHistoryNamesCutAsEventsCutThem(t *testing.T) {
	var seen []Request
	s := NewStore(Options{OnChange: func(r Request) { seen = append(seen, r) }})
	g := &Gate{Next: holdEvery, Store: s}
	long := func(c string) string { return strings.Repeat(c, 1<<20) }
	d := intercept.Decide(context.Background(), g, &intercept.ActionDescriptor{TxnID: intercept.NewTxnID(), ToolName: long("t"),
		Upstream: "bank", Agent: long("a"), SessionID: long("s"), Parameters: jsontext.Value(`{}`)})
	if _, err := s.Withdraw(d.ApprovalID, "mcp-cancel:"+long("a")); err != nil {
		t.Fatal(err)
	}
	if len(seen) != 2 {
		t.Fatalf("%d changes told, want 2", len(seen))
	}
	held, ended := seen[0], seen[1]
	for _, f := range []struct{ name, held, ended string }{
		{"tool", held.Tool, ended.Tool}, {"session", held.Session, ended.Session}, {"agent", held.Agent, ended.Agent},
		{"decided_by", "mcp-cancel:" + long("a"), ended.DecidedBy},
	} {
		if want := telemetry.BoundName(f.held); telemetry.BoundName(f.ended) != want {
			t.Errorf("the ended request's %s is recorded as %.40q…%q, the held one's as %.40q…%q", f.name,
				telemetry.BoundName(f.ended), tail(telemetry.BoundName(f.ended)), want, tail(want))
		}
	}
}

func tail(s string) string { return s[max(0, len(s)-90):] }
