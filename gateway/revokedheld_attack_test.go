package gateway

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/approval"
	"github.com/sluicehq/sluice/gateway/transport"
	"github.com/sluicehq/sluice/intercept"
)

// TestAttackRevokedAgentHeldCallRuns: a call held for approval waits as
// long as no one decides; an agent whose API key was revoked (or whose
// token expired) meanwhile had the call run when an operator approved it
// later — its credential was checked only when the call came. Now the
// decision made again once the wait ends finds the credential gone: the
// call is not sent, and the client gets an error saying why.
func TestAttackRevokedAgentHeldCallRuns(t *testing.T) {
	f, store := approvalFixture(t, Options{}, false)
	p, revoked := revocable("alice")
	h := f.g.Handler()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.ServeHTTP(w, r.WithContext(intercept.WithPrincipal(r.Context(), p)))
	}))
	t.Cleanup(srv.Close)
	url := srv.URL + "/mcp/demo"
	hdr := initializeWith(t, url, `{"elicitation":{"form":{}}}`)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	rd := transport.NewSSEReader(openPost(t, ctx, url, hdr, addCall).Body)
	if q, raw := nextMessage(t, rd); q.Method != "elicitation/create" {
		t.Fatalf("want the gateway's question, got %s", raw)
	}
	revoked.Store(true)
	if _, err := store.Decide(onlyRequest(t, store).ID, true, "operator"); err != nil {
		t.Fatal(err)
	}
	last, raw := nextMessage(t, rd)
	for last.Method != "" {
		last, raw = nextMessage(t, rd)
	}
	if f.upstreamSaw(`"add"`) {
		t.Errorf("the held call of an agent whose key was revoked while it waited reached the upstream once approved")
	}
	if string(last.ID) != "7" || !strings.Contains(raw, "no longer holds") || !strings.Contains(raw, "revoked") {
		t.Errorf("final message: got %s, want an error for the call saying its credential no longer holds", raw)
	}
}

// TestAttackRevokedHeldApprovalReused: a held call refused once approved
// because its agent's credential had been revoked while it waited
// (TestAttackRevokedAgentHeldCallRuns) left its approval request
// approved: the same agent sending the same call again with a new key,
// until the approval expired, had it run under that approval, which was
// given for a call the gateway had refused. Now the refusal ends the
// request (withdrawn, by the credential's lapse, as an operator listing
// it sees), and the call sent again is held anew, on a route and a
// virtual server.
func TestAttackRevokedHeldApprovalReused(t *testing.T) {
	for _, c := range []struct{ name, path, call string }{
		{"route", "/mcp/demo", addCall},
		{"virtual server", "/mcp", strings.Replace(addCall, `"add"`, `"demo_add"`, 1)},
	} {
		t.Run(c.name, func(t *testing.T) { testRevokedHeldApprovalReused(t, c.path, c.call) })
	}
}

func testRevokedHeldApprovalReused(t *testing.T, path, call string) {
	f, store := approvalFixture(t, Options{VirtualServers: []VirtualServer{{Naming: NamingPrefix}}}, false)
	old, revoked := revocable("alice")
	fresh, _ := revocable("alice") // the agent's new key
	srv := servedAs(t, f.g, func(r *http.Request) *intercept.Principal {
		if r.Header.Get("X-Key") == "fresh" {
			return fresh
		}
		return old
	})
	url := srv.URL + path
	hdr := initializeWith(t, url, `{"elicitation":{"form":{}}}`)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	rd := transport.NewSSEReader(openPost(t, ctx, url, hdr, call).Body)
	if q, raw := nextMessage(t, rd); q.Method != "elicitation/create" {
		t.Fatalf("want the gateway's question, got %s", raw)
	}
	revoked.Store(true)
	held := onlyRequest(t, store)
	if _, err := store.Decide(held.ID, true, "operator"); err != nil {
		t.Fatal(err)
	}
	last, raw := nextMessage(t, rd)
	for last.Method != "" {
		last, raw = nextMessage(t, rd)
	}
	if !strings.Contains(raw, "no longer holds") {
		t.Fatalf("final message: got %s, want the call refused for its credential", raw)
	}
	if req, _ := store.Get(held.ID); req.Status != approval.Withdrawn || !strings.Contains(req.DecidedBy, "credential") {
		t.Errorf("approval request of the refused call: got %s by %q, want withdrawn by the credential's lapse", req.Status, req.DecidedBy)
	}

	// The agent sends the same call again with its new key (under a new
	// request id: the first one's may still be finishing).
	hdr["X-Key"] = "fresh"
	resp := openPost(t, ctx, url, hdr, strings.Replace(call, `"id":7`, `"id":8`, 1))
	var first rpc
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		first, raw = nextMessage(t, transport.NewSSEReader(resp.Body))
	} else {
		b, _ := io.ReadAll(resp.Body)
		raw = string(b)
	}
	if f.upstreamSaw(`"add"`) {
		t.Errorf("the call refused for its revoked credential ran, sent again with a new key, under the approval given while it was held; first message %s", raw)
	}
	if first.Method != "elicitation/create" {
		t.Errorf("the call sent again: got %s, want it held anew (the gateway's question)", raw)
	}
}
