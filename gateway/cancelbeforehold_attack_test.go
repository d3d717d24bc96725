package gateway

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluicehq/sluice/approval"
	"github.com/sluicehq/sluice/gateway/transport"
	"github.com/sluicehq/sluice/intercept"
)

// TestAttackCancelBeforeHeldOneReplica: on one replica, without a shared
// store, a 2025-era client's cancellation of a call reaches the gateway
// on its own POST while the call's own POST is still being decided (a
// slow classifier, a slow approvals store): no call is held under its id
// yet. The cancellation is remembered for a while, and the hold that
// follows finds it: the user is never asked, the request is withdrawn,
// and an operator cannot approve it. Before, the cancellation was passed
// on to the upstream (which never saw the call) and lost: the call was
// held, and an operator's approval ran it. On a connection (/ws, /sse,
// wrap) messages are taken in order, so a cancellation cannot overtake
// its call.
func TestAttackCancelBeforeHeldOneReplica(t *testing.T) {
	store := approval.NewStore(approval.Options{})
	entered, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	slow := intercept.DeciderFunc(func(ctx context.Context, d *intercept.ActionDescriptor) (intercept.Decision, error) {
		if d.ToolName == "add" {
			once.Do(func() { close(entered) })
			untilReleased(t, release)
		}
		return (&intercept.StaticDecider{Default: intercept.Allow, Approval: []string{"add"}, Mode: intercept.ModeToolResult}).Decide(ctx, d)
	})
	f := newFixture(t, &approval.Gate{Next: slow, Store: store}, Options{Approver: store})
	url := f.gw.URL + "/mcp/demo"
	hdr := initializeWith(t, url, `{"elicitation":{}}`)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	first := make(chan string, 1)
	go func() {
		resp, err := sendPost(ctx, url, hdr, addCall)
		if err != nil {
			first <- err.Error()
			return
		}
		defer resp.Body.Close()
		ev, err := transport.NewSSEReader(resp.Body).Next()
		if err == io.EOF {
			first <- ""
			return
		}
		first <- string(ev.Data)
	}()
	select {
	case <-entered:
	case <-ctx.Done():
		t.Fatal("the call was never decided")
	}
	if status, _, body := post(t, url, hdr, cancelAdd); status != http.StatusAccepted {
		t.Fatalf("cancellation: got %d %s, want 202", status, body)
	}
	close(release)
	if got := <-first; got != "" {
		t.Errorf("the call's stream after its cancellation: got %q, want it to end without the question", got)
	}
	if rs := store.List(); len(rs) == 1 && rs[0].Status == approval.Pending {
		_, _ = store.Decide(rs[0].ID, true, "alice")
		time.Sleep(100 * time.Millisecond)
	}
	checkWithdrawn(t, store)
	if f.upstreamSaw(`"name":"add"`) {
		t.Errorf("the call the client cancelled ran upstream")
	}
}

// TestAttackCancelBeforeCallVirtualServer: through a virtual server, on
// one replica, the client's cancellation of a call reaches the gateway
// while the call's POST is still finding its upstream (the session's
// tools being listed): the virtual session serves no call under that id
// yet. It is remembered for a while, and the call, when it comes to be
// sent, is not: no approval request, no question, nothing upstream.
// Before, the cancellation was dropped (no call known), the call was
// held, and an operator's approval ran it.
func TestAttackCancelBeforeCallVirtualServer(t *testing.T) {
	f, store, armed, entered, release := listStalledVirtual(t)
	url := f.gw.URL + "/mcp"
	hdr := initializeWith(t, url, `{"elicitation":{}}`)
	armed.Store(true)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	first := make(chan string, 1)
	go func() {
		call := strings.Replace(addCall, `"name":"add"`, `"name":"demo_add"`, 1)
		resp, err := sendPost(ctx, url, hdr, call)
		if err != nil {
			first <- err.Error()
			return
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		first <- string(b)
	}()
	select {
	case <-entered:
	case <-ctx.Done():
		t.Fatal("the tools were never listed")
	}
	if status, _, body := post(t, url, hdr, cancelAdd); status != http.StatusAccepted {
		t.Fatalf("cancellation: got %d %s, want 202", status, body)
	}
	close(release)
	got := ""
	select {
	case got = <-first:
	case <-time.After(2 * time.Second): // the question, on a stream left open
	}
	if strings.Contains(got, "elicitation/create") || got == "" {
		t.Errorf("the call after its cancellation: got %q, want an answer that it was not sent, and no question", got)
	}
	if rs := store.List(); len(rs) != 0 {
		for _, r := range rs {
			if r.Status == approval.Pending {
				_, _ = store.Decide(r.ID, true, "alice")
			}
		}
		time.Sleep(100 * time.Millisecond)
		t.Errorf("approval requests: got %+v, want none", rs)
	}
	if f.upstreamSaw(`"name":"add"`) {
		t.Errorf("the call the client cancelled ran upstream")
	}
}

// listStalledVirtual is a virtual server (prefix naming) over demo whose
// add is held for approval in store. Once armed, the first tools/list
// the upstream gets closes entered and waits for release to be closed:
// a call is caught while it is finding its upstream.
func listStalledVirtual(t *testing.T) (f *fixture, store *approval.Store, armed *atomic.Bool, entered, release chan struct{}) {
	t.Helper()
	store = approval.NewStore(approval.Options{})
	dec := &approval.Gate{Next: &intercept.StaticDecider{Default: intercept.Allow, Approval: []string{"add"}, Mode: intercept.ModeToolResult}, Store: store}
	f = newFixture(t, dec, Options{Approver: store, VirtualServers: []VirtualServer{{Naming: NamingPrefix}}})
	armed = new(atomic.Bool)
	entered, release = make(chan struct{}), make(chan struct{})
	var once sync.Once
	next := f.rec.next
	f.rec.next = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(b))
		if armed.Load() && bytes.Contains(b, []byte(`"tools/list"`)) {
			once.Do(func() { close(entered) })
			untilReleased(t, release)
		}
		next.ServeHTTP(w, r)
	})
	return f, store, armed, entered, release
}
