package gateway

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

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
