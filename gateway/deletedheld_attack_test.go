package gateway

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/approval"
	"github.com/sluicehq/sluice/examples/demo-server/demo"
	"github.com/sluicehq/sluice/intercept"
)

// TestAttackDeletedSessionHeldCallRuns: a call held while the client's
// user is asked (approvals.client_may_answer) waits on its session; a
// client that then ended the session (DELETE) left the call held and its
// approval request pending, and an operator who approved it later had the
// call of a session that no longer existed run upstream, its answer on the
// stream the client had kept open — decided against that session's route
// memory, which the DELETE had dropped (a source read during the wait was
// forgotten). Ending a session abandons its calls as cancelling each
// would: the hold ends, the question is withdrawn, the approval request is
// withdrawn and the call never goes upstream, on a route and through a
// virtual server.
func TestAttackDeletedSessionHeldCallRuns(t *testing.T) {
	for _, c := range deleteCases {
		t.Run(c.name, func(t *testing.T) {
			demoH := demo.NewHTTPHandler(demo.NewServer(demo.Options{}), demo.HTTPOptions{})
			rec := &recorder{next: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if c.noDelete && r.Method == http.MethodDelete {
					w.WriteHeader(http.StatusMethodNotAllowed)
					return
				}
				demoH.ServeHTTP(w, r)
			})}
			up := httptest.NewServer(rec)
			t.Cleanup(up.Close)
			store := approval.NewStore(approval.Options{})
			opts := Options{Upstreams: []Upstream{{Name: "demo", URL: up.URL + "/mcp"}}, Approver: store}
			if c.path == "/mcp" {
				opts.VirtualServers = []VirtualServer{{Naming: NamingPrefix}}
			}
			dec := &approval.Gate{Next: &intercept.StaticDecider{Default: intercept.Allow, Approval: []string{"add"}, Mode: intercept.ModeToolResult}, Store: store}
			g, err := New(opts, &intercept.Interceptor{Decider: dec}, slog.New(slog.DiscardHandler))
			if err != nil {
				t.Fatal(err)
			}
			gw := httptest.NewServer(g.Handler())
			t.Cleanup(func() { closeServed(t, gw, g) })
			url := gw.URL + c.path
			hdr := initializeWith(t, url, `{"elicitation":{"form":{}}}`)
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			rd, _ := askedToApprove(t, ctx, url, hdr, c.tool)
			if status := deleteSession(t, url, hdr); status/100 != 2 {
				t.Fatalf("DELETE: got %d, want the session ended", status)
			}
			// An operator approves the call (or tries to).
			if _, err := store.Decide(onlyRequest(t, store).ID, true, "operator"); err == nil {
				t.Errorf("an operator approved a held call of a session its client had ended")
			}
			for {
				ev, err := rd.Next()
				if err == io.EOF {
					break
				}
				if err != nil {
					t.Fatal(err)
				}
				if strings.Contains(string(ev.Data), `"result":{"content"`) {
					t.Errorf("the held call of the ended session was answered: %s", ev.Data)
				}
			}
			if rec.count(`"name":"add"`) > 0 {
				t.Errorf("the held call of a session its client had ended ran upstream once approved")
			}
			checkWithdrawn(t, store)
		})
	}
}

// deleteCases are where the DELETE tests end a session holding a call:
// a route, and a virtual server whose upstream takes the DELETE or, as
// the specification lets it, answers it with 405.
var deleteCases = []struct {
	name, path, tool string
	noDelete         bool // the upstream answers DELETE with 405
}{
	{"route", "/mcp/demo", "add", false},
	{"virtual server", "/mcp", "demo_add", false},
	{"virtual server, upstream without DELETE", "/mcp", "demo_add", true},
}
