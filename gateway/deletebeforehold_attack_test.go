package gateway

import (
	"context"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluicehq/sluice/approval"
	"github.com/sluicehq/sluice/gateway/transport"
	"github.com/sluicehq/sluice/intercept"
)

// TestAttackDeleteBeforeHeld: on one replica, without a shared store, a
// client ends its session (DELETE) while a call of it is still being
// decided (a slow classifier, a slow approvals store): no call is held
// yet, so the DELETE's cancellation of its held calls found none, and the
// hold that followed went on for a session that no longer existed. The
// client's user was asked on the stream the client kept open, the
// approval request stayed pending, and an operator's approval sent the
// call upstream, decided against the route memory the DELETE had
// dropped. A session's end now refuses the holds that come after it, as
// a cancellation before its call's hold does
// (TestAttackCancelBeforeHeldOneReplica): the stream ends without the
// question, the request is withdrawn, and nothing goes upstream.
func TestAttackDeleteBeforeHeld(t *testing.T) {
	for _, c := range deleteCases {
		t.Run(c.name, func(t *testing.T) {
			created := make(chan string, 1)
			store := approval.NewStore(approval.Options{OnChange: func(r approval.Request) {
				if r.Status == approval.Pending {
					select {
					case created <- r.ID:
					default:
					}
				}
			}})
			entered, release := make(chan struct{}), make(chan struct{})
			var once sync.Once
			slow := intercept.DeciderFunc(func(ctx context.Context, d *intercept.ActionDescriptor) (intercept.Decision, error) {
				if d.ToolName == "add" {
					once.Do(func() { close(entered) })
					untilReleased(t, release)
				}
				return (&intercept.StaticDecider{Default: intercept.Allow, Approval: []string{"add"}, Mode: intercept.ModeToolResult}).Decide(ctx, d)
			})
			opts := Options{Approver: store}
			if c.path == "/mcp" {
				opts.VirtualServers = []VirtualServer{{Naming: NamingPrefix}}
			}
			f := newFixture(t, &approval.Gate{Next: slow, Store: store}, opts)
			if c.noDelete {
				next := f.rec.next
				f.rec.next = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					if r.Method == http.MethodDelete {
						w.WriteHeader(http.StatusMethodNotAllowed)
						return
					}
					next.ServeHTTP(w, r)
				})
			}
			url := f.gw.URL + c.path
			hdr := initializeWith(t, url, `{"elicitation":{"form":{}}}`)
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			events := make(chan string)
			go func() {
				defer close(events)
				resp, err := sendPost(ctx, url, hdr, strings.Replace(addCall, `"add"`, `"`+c.tool+`"`, 1))
				if err != nil {
					return
				}
				defer resp.Body.Close()
				rd := transport.NewSSEReader(resp.Body)
				for {
					ev, err := rd.Next()
					if err != nil {
						return
					}
					tell(t, events, string(ev.Data))
				}
			}()
			select {
			case <-entered:
			case <-ctx.Done():
				t.Fatal("the call was never decided")
			}
			if status := deleteSession(t, url, hdr); status/100 != 2 {
				t.Fatalf("DELETE: got %d, want the session ended", status)
			}
			close(release)
			// An operator approves the call's request as soon as it is
			// made (or tries to).
			select {
			case id := <-created:
				_, _ = store.Decide(id, true, "operator")
			case <-ctx.Done():
				t.Fatal("no approval request was made")
			}
			for ev := range events {
				if strings.Contains(ev, "elicitation/create") {
					t.Errorf("the user was asked about a call of a session its client had ended: %s", ev)
				}
				if strings.Contains(ev, `"result":{"content"`) {
					t.Errorf("the call of the ended session was answered: %s", ev)
				}
			}
			if f.upstreamSaw(`"name":"add"`) {
				t.Errorf("the call of a session its client had ended ran upstream once approved")
			}
		})
	}
}

// TestDeleteRefusedSessionEnds: a session whose upstream refuses its
// DELETE (405, as the specification lets it) ends at the gateway all the
// same (TestAttackDeleteRefusedUpstreamEndsSession): a call sent after on
// its id is refused as of an unknown session, neither held nor its user
// asked, and never reaches the upstream.
func TestDeleteRefusedSessionEnds(t *testing.T) {
	store := approval.NewStore(approval.Options{})
	dec := &approval.Gate{Next: &intercept.StaticDecider{Default: intercept.Allow, Approval: []string{"add"}, Mode: intercept.ModeToolResult}, Store: store}
	f := newFixture(t, dec, Options{Approver: store})
	next := f.rec.next
	f.rec.next = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodDelete {
			w.WriteHeader(http.StatusMethodNotAllowed)
			return
		}
		next.ServeHTTP(w, r)
	})
	url := f.gw.URL + "/mcp/demo"
	hdr := initializeWith(t, url, `{"elicitation":{"form":{}}}`)
	if status := deleteSession(t, url, hdr); status != http.StatusNoContent {
		t.Fatalf("DELETE: got %d, want 204, the gateway's session ended", status)
	}
	if status, _, body := post(t, url, hdr, addCall); status != http.StatusNotFound {
		t.Errorf("a call of the ended session: got %d %s, want 404", status, body)
	}
	if n := len(store.List()); n != 0 {
		t.Errorf("a call of the ended session was held: %d approval requests", n)
	}
	if f.upstreamSaw(`"name":"add"`) {
		t.Errorf("a call of the ended session reached the upstream")
	}
}

// TestAttackDeleteBeforeInnerSession: through a virtual server, the
// client ends its session (DELETE) while a call of it is finding its
// upstream (the session's tools being listed). The end ended the inner
// sessions, one per upstream; the call, sent after on its upstream's,
// found it gone, and the virtual session went on with a new one, as for
// an inner session its route let go: the call was held on that one, its
// approval request left pending for an operator (whose approval, given
// before the client's answer came, sent it upstream), and the new inner
// session, never ended, kept its upstream session open and its room
// among the sessions of the agent and of its address.
func TestAttackDeleteBeforeInnerSession(t *testing.T) {
	f, store, armed, entered, release := listStalledVirtual(t)
	url := f.gw.URL + "/mcp"
	hdr := initializeWith(t, url, `{"elicitation":{"form":{}}}`)
	armed.Store(true)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	answered := make(chan string, 1)
	go func() {
		resp, err := sendPost(ctx, url, hdr, strings.Replace(addCall, `"add"`, `"demo_add"`, 1))
		if err != nil {
			answered <- err.Error()
			return
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		answered <- string(b)
	}()
	select {
	case <-entered:
	case <-ctx.Done():
		t.Fatal("the tools were never listed")
	}
	if status := deleteSession(t, url, hdr); status/100 != 2 {
		t.Fatalf("DELETE: got %d, want the session ended", status)
	}
	close(release)
	got := <-answered
	if n := f.g.sessions.len(); n != 0 {
		t.Errorf("inner sessions left after the virtual session ended: got %d, want 0", n)
	}
	for _, r := range store.List() {
		if r.Status == approval.Pending {
			t.Errorf("the call of the ended session left its approval request pending (answer %.120s)", got)
			_, _ = store.Decide(r.ID, true, "operator")
		}
	}
	if f.upstreamSaw(`"name":"add"`) {
		t.Errorf("the call of a session its client had ended ran upstream")
	}
}
