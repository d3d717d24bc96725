package gateway

import (
	"log/slog"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/examples/demo-server/demo"
	"github.com/sluicehq/sluice/intercept"
	"github.com/sluicehq/sluice/policy"
)

// TestSealedSessionKeepsMemoryWhenIdle: a replica that lets an idle
// sealed session go only forgets its copy (the id brings it back, here or
// on another replica), so what policy remembers of the session stays. An
// agent that waited out session_idle_timeout after a sensitive read must
// still be denied the network sink in that session.
func TestSealedSessionKeepsMemoryWhenIdle(t *testing.T) {
	up := httptest.NewServer(demo.NewHTTPHandler(demo.NewServer(demo.Options{}), demo.HTTPOptions{}))
	t.Cleanup(up.Close)
	store := policy.NewMemoryStore(policy.MemoryOptions{})
	p, err := policy.Compile([]byte(`default: allow
result_mode: tool_result
tool_classes:
  read_document: [source:sensitive]
  web_search: [sink:network]
route_rules:
  - {id: no-network-after-sensitive-read, after: {match_any_class: [source:sensitive]}, deny: {match_any_class: [sink:network]}, reason: no sink after a sensitive read}
`), "p.yaml", policy.Options{Store: store})
	if err != nil {
		t.Fatal(err)
	}
	ended := make(chan string, 8)
	g, err := New(Options{
		Upstreams:          []Upstream{{Name: "demo", URL: up.URL + "/mcp"}},
		SessionKeys:        [][]byte{key(1)},
		SessionIdleTimeout: 40 * time.Millisecond,
		OnSessionEnd:       func(id string) { store.ForgetSession(id); tell(t, ended, id) },
	}, &intercept.Interceptor{Decider: p}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	gw := httptest.NewServer(g.Handler())
	t.Cleanup(func() { closeServed(t, gw, g) })
	hdr := openSession(t, gw.URL+"/mcp/demo", "alice", nil)
	if _, _, body := post(t, gw.URL+"/mcp/demo", hdr, readDocument(1)); strings.Contains(body, `"isError":true`) {
		t.Fatalf("read_document: %s", body)
	}
	// Idle past the timeout: the replica lets its copy go.
	deadline := time.Now().Add(5 * time.Second)
	for g.sessions.find(hdr[hdrSession]) != nil {
		if time.Now().After(deadline) {
			t.Fatal("the idle session was not let go")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if _, _, body := post(t, gw.URL+"/mcp/demo", hdr, webSearch(2, "salaries", "")); !routeDenied(body) {
		t.Errorf("web_search in the same (sealed) session after it went idle: %s, want the route rule's denial", body)
	}
	select {
	case id := <-ended:
		t.Errorf("OnSessionEnd(%.20s…) for a sealed session that was only idle", id)
	default:
	}
}
