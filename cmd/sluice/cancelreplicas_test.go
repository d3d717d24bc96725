package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/sluicehq/sluice/examples/demo-server/demo"
	"github.com/sluicehq/sluice/internal/redistest"
)

// TestCancelledHeldCallAcrossServeReplicas: two `sluice serve` replicas
// with one session key, agent_tasks and approvals in one real
// redis-server, behind a load balancer that sends the session's
// cancellations to B and the rest to A. The real go-sdk client's user is
// asked to approve add (held on A) and the agent gives up: its
// notifications/cancelled, through B, withdraws the request, an
// operator's approval through B's admin API is refused, and neither the
// call nor the cancellation reaches the upstream. Before, B passed the
// cancellation on and the request stayed pending for an operator.
func TestCancelledHeldCallAcrossServeReplicas(t *testing.T) {
	srv := redistest.Start(t)
	var rec upstreamLog
	up, upstreamSaw := rec.wrap(demo.NewHTTPHandler(demo.NewServer(demo.Options{}), demo.HTTPOptions{})), rec.saw
	same := func(http.Handler) http.Handler { return up }
	cfg := holdAdd + "admin_token: t0k\n" +
		"session_keys: [\"" + base64.StdEncoding.EncodeToString([]byte(strings.Repeat("k", 32))) + "\"]\n" +
		"agent_tasks: {redis_url: \"" + srv.URL() + "\"}\n" +
		"approvals: {client_may_answer: true, timeout: 1m, redis_url: \"" + srv.URL() + "\"}\n"
	a, b := startServeWith(t, cfg, same), startServeWith(t, cfg, same)
	var toB atomic.Int64
	lb := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		to := a.url
		if r.Method == http.MethodPost {
			body, _ := io.ReadAll(r.Body)
			r.Body = io.NopCloser(bytes.NewReader(body))
			if strings.Contains(string(body), "notifications/cancelled") {
				toB.Add(1)
				to = b.url
			}
		}
		relayTo(w, r, to)
	}))
	t.Cleanup(lb.Close)

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	callCtx, giveUp := context.WithCancel(ctx)
	asked := make(chan struct{}, 1)
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "agent", Version: "1"}, &mcp.ClientOptions{
		ElicitationHandler: func(ctx context.Context, _ *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			asked <- struct{}{}
			select { // the user never answers; the agent gives up
			case <-ctx.Done():
			case <-callCtx.Done():
			}
			return nil, context.Canceled
		},
	}).Connect(ctx, &mcp.StreamableClientTransport{Endpoint: lb.URL, DisableStandaloneSSE: true},
		&mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	done := make(chan error, 1)
	go func() {
		_, err := cs.CallTool(callCtx, &mcp.CallToolParams{Name: "add", Arguments: map[string]any{"a": 2, "b": 3}})
		done <- err
	}()
	select {
	case <-asked:
	case err := <-done:
		t.Fatalf("the call ended before its user was asked: %v", err)
	}
	giveUp()
	<-done

	adminB := []string{"--admin", "http://" + b.admin, "--token", "t0k"}
	var out bytes.Buffer
	id := regexp.MustCompile(`apr_[0-9a-f]+`)
	deadline := time.Now().Add(5 * time.Second)
	for {
		out.Reset()
		if err := runApprovals(ctx, append([]string{"list"}, adminB...), &out); err != nil {
			t.Fatalf("approvals list on B: %v", err)
		}
		if strings.Contains(out.String(), "withdrawn") || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	apr := id.FindString(out.String())
	if apr == "" || !strings.Contains(out.String(), "withdrawn") {
		t.Fatalf("approvals list on B after the cancellation through B: %s, want the request withdrawn", &out)
	}
	if err := runApprovals(ctx, append([]string{"approve", apr, "--by", "ops"}, adminB...), io.Discard); err == nil {
		t.Errorf("an operator approved, through B, the call the client cancelled through B")
	}
	if toB.Load() == 0 {
		t.Fatal("the client sent no cancellation: the test proves nothing")
	}
	if upstreamSaw(`"name":"add"`) || upstreamSaw("notifications/cancelled") {
		t.Errorf("the cancelled call or its cancellation reached the upstream")
	}
}
