package e2e

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http/httptest"
	"os/exec"
	"sync"
	"testing"
	"time"

	"github.com/sluicehq/sluice/examples/demo-server/demo"
	"github.com/sluicehq/sluice/gateway"
	"github.com/sluicehq/sluice/intercept"
)

// agentsSeen records the agent policy saw for each upstream/tool.
type agentsSeen struct {
	mu   sync.Mutex
	seen map[string][]string
}

func (s *agentsSeen) Decide(_ context.Context, d *intercept.ActionDescriptor) (intercept.Decision, error) {
	s.mu.Lock()
	if s.seen == nil {
		s.seen = map[string][]string{}
	}
	s.seen[d.Upstream+"/"+d.ToolName] = append(s.seen[d.Upstream+"/"+d.ToolName], d.Agent)
	s.mu.Unlock()
	return intercept.Decision{Verdict: intercept.Allow, Reason: "allowed"}, nil
}

// TestVirtualStatelessUpstreamAgentTS: the official TypeScript SDK
// client, without auth, through a virtual server over the demo server and
// a stateless TypeScript SDK server (sessionIdGenerator: undefined): every
// call is decided as the agent the client named at initialize. A call to
// the stateless server was decided as the agent "" (nobody) before
// (TestAttackVirtualSessionlessUpstreamNobody).
func TestVirtualStatelessUpstreamAgentTS(t *testing.T) {
	requireNode(t)
	mail := startAnnounced(t, "SLUICE_E2E_READY ", "node", "express-server.mjs")
	demoSrv := httptest.NewServer(demo.NewHTTPHandler(demo.NewServer(demo.Options{}), demo.HTTPOptions{}))
	t.Cleanup(demoSrv.Close)
	dec := &agentsSeen{}
	g, err := gateway.New(gateway.Options{
		Upstreams:      []gateway.Upstream{{Name: "demo", URL: demoSrv.URL + "/mcp"}, {Name: "mail", URL: mail}},
		VirtualServers: []gateway.VirtualServer{{}},
	}, &intercept.Interceptor{Decider: dec}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(g.Handler())
	t.Cleanup(func() { srv.Close(); g.Close() })

	calls, _ := json.Marshal([][]any{
		{"echo", map[string]any{"message": "from demo"}},
		{"mail_send_email", map[string]any{"to": "a@b.example", "body": "x"}}, // demo offers send_email too
	})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	b, err := exec.CommandContext(ctx, "node", "aggregate-client.mjs", srv.URL+"/mcp", string(calls)).Output()
	if err != nil {
		t.Fatalf("client: %v\n%s", err, b)
	}
	var out struct {
		OK    bool `json:"ok"`
		Calls []struct {
			Name string `json:"name"`
			OK   bool   `json:"ok"`
			Text string `json:"text"`
		} `json:"calls"`
	}
	if err := json.Unmarshal(b, &out); err != nil || !out.OK || len(out.Calls) != 2 || !out.Calls[0].OK || !out.Calls[1].OK {
		t.Fatalf("client output %s (%v)", b, err)
	}
	dec.mu.Lock()
	defer dec.mu.Unlock()
	for _, call := range []string{"demo/echo", "mail/send_email"} {
		got := dec.seen[call]
		if len(got) == 0 {
			t.Errorf("%s: not decided (seen %v)", call, dec.seen)
		}
		for _, a := range got {
			if a != "sluice-aggregate-e2e" {
				t.Errorf("%s decided as agent %q, want the client's name at initialize, sluice-aggregate-e2e", call, a)
			}
		}
	}
}
