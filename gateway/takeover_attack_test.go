package gateway

import (
	"context"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluicehq/sluice/intercept"
	"github.com/sluicehq/sluice/internal/redistest"
)

// TestAttackTakeOverBrokenList (found by a review): on Streamable HTTP to
// an HTTP upstream, an agent sends a tools/list (policy hides send_email
// from lists) and hangs up before its answer; the session remembers it,
// for a resumed stream may answer it. The agent then sends a tools/call
// under the same id, which "took it over": the memory was forgotten and
// the call sent. The upstream still owed the list's answer under that
// id: one that routes answers by id (the TypeScript SDK's server) sent it
// on the call's stream, and one with an event store replayed it when the
// agent resumed the list's stream, after the call's stream broke off too
// (remembered as a tools/call). Either way the gateway screened the list
// as the call's result and send_email and its poisoned description
// reached the agent, unrecorded as a list. A request under the id of a
// broken-off request is refused (400, -32600, "give each request its own
// id"), unsent, as on a bridged session; on one replica, and across
// replicas sharing the session in Redis.
func TestAttackTakeOverBrokenList(t *testing.T) {
	const call = `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"echo","arguments":{}}}`
	refusedOK := func(t *testing.T, status int, got string, shared bool) {
		t.Helper()
		if strings.Contains(got, "send_email") || strings.Contains(got, poisoned) {
			t.Errorf("tools/call under the broken-off list's id: got %s, want it refused", got)
		}
		if status != http.StatusBadRequest || errorCode(t, got) != intercept.CodeInvalidRequest ||
			!strings.Contains(got, "give each request its own id") || !shared && !strings.Contains(got, "the tools/list with id 5") {
			t.Errorf("tools/call under the broken-off list's id: got %d %s, want 400 -32600 (naming the list, on one replica)", status, got)
		}
	}

	t.Run("answer routed by id", func(t *testing.T) {
		listed := make(chan struct{}, 1)
		up := routingUpstream(t, listed)
		var lists atomic.Int64
		urls, left := hidingReplicas(t, up, nil, &lists)
		hdr := openSession(t, urls[0], "alice", nil)
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan struct{})
		go func() {
			defer close(done)
			req, _ := http.NewRequestWithContext(ctx, http.MethodPost, urls[0], strings.NewReader(`{"jsonrpc":"2.0","id":5,"method":"tools/list"}`))
			for k, v := range with(hdr, "Content-Type", "application/json", "Accept", "application/json, text/event-stream", "X-Test-Leaves", "1") {
				req.Header.Set(k, v)
			}
			if resp, err := http.DefaultClient.Do(req); err == nil {
				readAll(resp.Body)
				resp.Body.Close()
			}
		}()
		select {
		case <-listed:
		case <-time.After(5 * time.Second):
			t.Fatal("the upstream never got the list")
		}
		cancel()
		<-done
		<-left
		status, _, got := post(t, urls[0], hdr, call)
		refusedOK(t, status, got, false)
	})

	for _, shared := range []bool{false, true} {
		name := "resumed stream"
		if shared {
			name += ", replicas sharing the session"
		}
		t.Run(name, func(t *testing.T) {
			up := eventStoreUpstream(t)
			var lists atomic.Int64
			var urls []string
			var left chan struct{}
			if shared {
				urls, left = sharingReplicas(t, up, nil, &lists, sharedStore(t, redistest.Start(t)))
			} else {
				urls, left = hidingReplicas(t, up, nil, &lists)
				urls[1] = urls[0]
			}
			hdr := openSession(t, urls[0], "alice", nil)
			leaves := with(hdr, "X-Test-Leaves", "1")
			event, hangUp, refused := openPrimed(t, urls[0], leaves, `{"jsonrpc":"2.0","id":5,"method":"tools/list"}`)
			if refused != "" {
				t.Fatalf("tools/list: %s", refused)
			}
			hangUp()
			<-left
			_, hangUp, refused = openPrimed(t, urls[1], leaves, call)
			hangUp()
			<-left // its exchange ended, whatever it was
			if refused == "" {
				t.Error("tools/call under the broken-off list's id: sent, want it refused")
			} else {
				refusedOK(t, http.StatusBadRequest, refused, shared)
			}
			got := resumeFrom(t, urls[0], hdr, event)
			if strings.Contains(got, "send_email") || strings.Contains(got, poisoned) || strings.Count(got, `"echo"`) != 1 || lists.Load() == 0 {
				t.Errorf("the list's resumed stream: got %q (%d lists recorded), want the list screened, recorded", got, lists.Load())
			}
		})
	}
}
