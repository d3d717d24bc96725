package main

import (
	"context"
	"encoding/base64"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/redistest"
)

// TestDeletedSessionHeldCallAcrossServeReplicas: two `sluice serve`
// replicas with one session key, agent_tasks and approvals in one real
// redis-server. A client whose user can be asked calls add on A, which
// holds it for approval; the client then ends its session with a DELETE
// that reaches B. B withdraws the request, an operator's approval through
// B's admin API is refused, A's hold ends without an answer, and the call
// never reaches the upstream. Before, B ended the session and left the
// request pending on A: an operator's approval ran the call of a session
// its client had ended.
func TestDeletedSessionHeldCallAcrossServeReplicas(t *testing.T) {
	srv := redistest.Start(t)
	var rec upstreamLog
	cfg := holdAdd + "admin_token: t0k\n" +
		"session_keys: [\"" + base64.StdEncoding.EncodeToString([]byte(strings.Repeat("k", 32))) + "\"]\n" +
		"agent_tasks: {redis_url: \"" + srv.URL() + "\"}\n" +
		"approvals: {client_may_answer: true, timeout: 1m, redis_url: \"" + srv.URL() + "\"}\n"
	a, b := startServeWith(t, cfg, rec.wrap), startServeWith(t, cfg, rec.wrap)

	hdr := session2025(t, a.url, "agent", `{"elicitation":{}}`)

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	resp, err := openPost(ctx, a.url, hdr, `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"add","arguments":{"a":2,"b":3}}}`)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if got, err := readUntil(resp.Body, "elicitation/create"); err != nil {
		t.Fatalf("A's stream of the call: %q (%v), want its user asked", got, err)
	}

	del, _ := http.NewRequestWithContext(ctx, http.MethodDelete, b.url, nil)
	for k, v := range hdr {
		del.Header.Set(k, v)
	}
	dresp, err := http.DefaultClient.Do(del)
	if err != nil {
		t.Fatal(err)
	}
	dresp.Body.Close()
	if dresp.StatusCode/100 != 2 {
		t.Fatalf("DELETE through B: %d, want the session ended", dresp.StatusCode)
	}

	apr, listing := heldOn(t, ctx, b.admin)
	if !strings.Contains(listing, "withdrawn") {
		t.Errorf("approvals list on B after the session's DELETE through B: %s, want the request withdrawn", listing)
	}
	if err := runApprovals(ctx, []string{"approve", apr, "--by", "ops", "--admin", "http://" + b.admin, "--token", "t0k"}, io.Discard); err == nil {
		t.Errorf("an operator approved, through B, the held call of a session its client ended through B")
	}
	// A's stream ends once the hold does: without the call's answer.
	rest, _ := io.ReadAll(resp.Body)
	if strings.Contains(string(rest), `"result"`) {
		t.Errorf("A's stream after the session's DELETE through B: %q, want no answer", rest)
	}
	if rec.saw(`"name":"add"`) {
		t.Errorf("the held call of a session its client ended through B reached the upstream")
	}
}
