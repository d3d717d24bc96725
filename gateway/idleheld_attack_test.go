package gateway

import (
	"context"
	"log/slog"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/approval"
	"github.com/sluicehq/sluice/examples/demo-server/demo"
	"github.com/sluicehq/sluice/gateway/transport"
	"github.com/sluicehq/sluice/intercept"
	"github.com/sluicehq/sluice/policy"
)

// TestAttackIdleSessionHeldCallForgets: a session whose call is held while
// its user is asked is not idle — its client waits on the call's POST —
// but the gateway counted only requests that came, and ended the session
// under the held call once session_idle_timeout passed (shorter than
// approvals.timeout): the session's route memory went with it. An agent
// whose network sink (web_search) was held, that read a sensitive
// document meanwhile and then sent nothing for the idle timeout, had the
// sink run once approved, decided against a memory that had forgotten
// the read. Now a session holding a call is not ended as idle: the
// approved call is decided against the session's memory, and denied.
func TestAttackIdleSessionHeldCallForgets(t *testing.T) {
	mem := policy.NewMemoryStore(policy.MemoryOptions{})
	p, err := policy.Compile([]byte(`default: allow
result_mode: tool_result
tool_classes:
  read_document: [source:sensitive]
  web_search: [sink:network]
require_approval: [web_search]
route_rules:
  - {id: no-network-after-sensitive-read, after: {match_any_class: [source:sensitive]}, deny: {match_any_class: [sink:network]}, reason: no sink after a sensitive read}
`), "p.yaml", policy.Options{Store: mem})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ name, path, prefix string }{
		{"route", "/mcp/demo", ""},
		{"virtual server", "/mcp", "demo_"},
	} {
		t.Run(c.name, func(t *testing.T) {
			rec := &recorder{next: demo.NewHTTPHandler(demo.NewServer(demo.Options{}), demo.HTTPOptions{})}
			up := httptest.NewServer(rec)
			t.Cleanup(up.Close)
			store := approval.NewStore(approval.Options{})
			opts := Options{
				Upstreams:          []Upstream{{Name: "demo", URL: up.URL + "/mcp"}},
				Approver:           store,
				SessionIdleTimeout: 40 * time.Millisecond,
				OnSessionEnd:       mem.ForgetSession,
			}
			if c.prefix != "" {
				opts.VirtualServers = []VirtualServer{{Naming: NamingPrefix}}
			}
			g, err := New(opts, &intercept.Interceptor{Decider: &approval.Gate{Next: p, Store: store}}, slog.New(slog.DiscardHandler))
			if err != nil {
				t.Fatal(err)
			}
			gw := httptest.NewServer(g.Handler())
			t.Cleanup(func() { closeServed(t, gw, g) })
			url := gw.URL + c.path
			hdr := initializeWith(t, url, `{"elicitation":{"form":{}}}`)
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			call := strings.Replace(webSearch(7, "salaries", ""), `"web_search"`, `"`+c.prefix+`web_search"`, 1)
			rd := transport.NewSSEReader(openPost(t, ctx, url, hdr, call).Body)
			if q, raw := nextMessage(t, rd); q.Method != "elicitation/create" {
				t.Fatalf("want the gateway's question, got %s", raw)
			}
			read := strings.Replace(readDocument(8), `"read_document"`, `"`+c.prefix+`read_document"`, 1)
			if _, _, body := post(t, url, hdr, read); strings.Contains(body, `"isError":true`) || !strings.Contains(body, `"result"`) {
				t.Fatalf("read_document: %s", body)
			}
			// The agent sends nothing for several idle timeouts while its
			// call is held (a virtual server ends idle sessions when
			// another opens).
			time.Sleep(200 * time.Millisecond)
			initializeWith(t, url, `{}`)
			time.Sleep(50 * time.Millisecond)
			if _, err := store.Decide(onlyRequest(t, store).ID, true, "operator"); err != nil {
				t.Fatal(err)
			}
			last, raw := nextMessage(t, rd)
			for last.Method != "" {
				last, raw = nextMessage(t, rd)
			}
			if rec.count(`"web_search"`) > 0 {
				t.Errorf("the held web_search ran after a sensitive read in its session once approved (the session was ended as idle under it)")
			}
			if !routeDenied(raw) {
				t.Errorf("the approved call's answer: %s, want the route rule's denial", raw)
			}
		})
	}
}
