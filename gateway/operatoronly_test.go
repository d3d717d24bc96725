package gateway

import (
	"context"
	"io"
	"log/slog"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-json-experiment/json"

	"github.com/sluicehq/sluice/approval"
	"github.com/sluicehq/sluice/gateway/transport"
	"github.com/sluicehq/sluice/intercept"
)

// operatorOnlyHolds holds add for approval, the hold an operator's only
// while only is set (as govern's Advisor marks a hold resting on the
// classifier over the policy's deny).
func operatorOnlyHolds(store *approval.Store, only *atomic.Bool) intercept.Decider {
	hold := &intercept.StaticDecider{Default: intercept.Allow, Approval: []string{"add"}, Mode: intercept.ModeToolResult}
	return &approval.Gate{Store: store, Next: intercept.DeciderFunc(func(ctx context.Context, d *intercept.ActionDescriptor) (intercept.Decision, error) {
		dec, err := hold.Decide(ctx, d)
		if dec.Verdict == intercept.RequireApproval && only.Load() {
			dec.OperatorOnly = true
		}
		return dec, err
	})}
}

// TestOperatorOnlyHoldNeverAsked: a hold only an operator may answer
// (intercept.Decision.OperatorOnly) is put to the client on no transport,
// and an answer the client sends for it (with a requestState the gateway
// issued for the same call before its hold became the operator's) decides
// nothing: on a 2025 session's POST (elicitation on its SSE stream), on a
// connection (WebSocket, legacy SSE: relay.ask), and on 2026-07-28's
// input_required and retry.
func TestOperatorOnlyHoldNeverAsked(t *testing.T) {
	t.Run("2025 post", func(t *testing.T) {
		var only atomic.Bool
		only.Store(true)
		store := approval.NewStore(approval.Options{})
		f := newFixture(t, operatorOnlyHolds(store, &only), Options{Approver: store})
		url := f.gw.URL + "/mcp/demo"
		hdr := initializeWith(t, url, `{"elicitation":{}}`)
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		defer cancel()
		resp := openPost(t, ctx, url, hdr, addCall)
		if ct := resp.Header.Get("Content-Type"); resp.StatusCode != 200 || !strings.HasPrefix(ct, "application/json") {
			m, raw := nextMessage(t, transport.NewSSEReader(resp.Body))
			t.Fatalf("got %d %q, first message %s (%s), want the approval_required envelope, the client not asked", resp.StatusCode, ct, raw, m.Method)
		}
		body, _ := io.ReadAll(resp.Body)
		if !strings.Contains(string(body), `"status":"approval_required"`) {
			t.Errorf("got %s, want the approval_required envelope", body)
		}
	})
	t.Run("2026 retry with an earlier state", func(t *testing.T) {
		var only atomic.Bool
		store := approval.NewStore(approval.Options{})
		f := newFixture(t, operatorOnlyHolds(store, &only), Options{Approver: store})
		const caps = `{"elicitation":{}}`
		args := `{"a":2,"b":3}`
		held := heldModern(t, f, modernCallWith(1, args, caps, "agent-a", ""))
		only.Store(true)
		status, _, body := post(t, f.gw.URL+"/mcp/demo", modernHeaders("tools/call", "add"), modernCallWith(2, args, caps, "agent-a", answerParams("accept", held.RequestState)))
		if status != 200 || strings.Contains(body, "input_required") || !strings.Contains(body, `"status":"approval_required"`) {
			t.Errorf("retry: got %d %s, want the call held, the client not asked", status, body)
		}
		if got := onlyRequest(t, store); got.Status != approval.Pending || f.upstreamSaw(`"name":"add"`) {
			t.Errorf("request: got %s, want it pending for an operator and nothing forwarded", got.Status)
		}
	})
	for _, relayed := range []struct {
		name string
		dial func(base string) transport.Dialer
	}{
		{"ws", func(base string) transport.Dialer {
			return &transport.WSDialer{URL: "ws" + strings.TrimPrefix(base, "http") + "/ws/u"}
		}},
		{"sse", func(base string) transport.Dialer { return &transport.SSEDialer{URL: base + "/sse/u"} }},
	} {
		t.Run(relayed.name, func(t *testing.T) {
			var only atomic.Bool
			only.Store(true)
			store := approval.NewStore(approval.Options{})
			up := &scriptUpstream{handle: func(msg []byte) [][]byte {
				var r reqView
				if json.Unmarshal(msg, &r) != nil || r.Method == "" || len(r.ID) == 0 {
					return nil
				}
				if r.Method == "initialize" {
					return [][]byte{[]byte(`{"jsonrpc":"2.0","id":` + string(r.ID) + `,"result":{"protocolVersion":"2025-06-18","capabilities":{"tools":{}},"serverInfo":{"name":"s","version":"1"}}}`)}
				}
				return [][]byte{[]byte(`{"jsonrpc":"2.0","id":` + string(r.ID) + `,"result":{"content":[{"type":"text","text":"ran ` + r.Params.Name + `"}]}}`)}
			}}
			g, err := New(Options{Upstreams: []Upstream{{Name: "u", Command: "true"}}, Approver: store},
				&intercept.Interceptor{Decider: operatorOnlyHolds(store, &only)}, slog.New(slog.DiscardHandler))
			if err != nil {
				t.Fatal(err)
			}
			g.routes["u"].dialer = up
			srv := httptest.NewServer(g.Handler())
			t.Cleanup(func() { closeServed(t, srv, g) })
			ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
			defer cancel()
			c, err := relayed.dial(srv.URL).Dial(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			read := rpcReader(t, ctx, c)
			c.Write(ctx, []byte(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{"elicitation":{}},"clientInfo":{"name":"desk","version":"1"}}}`))
			read()
			c.Write(ctx, []byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`))
			c.Write(ctx, []byte(addCall))
			if m, raw := read(); m.Method == "elicitation/create" || string(m.ID) != "7" || !strings.Contains(raw, `"status":"approval_required"`) {
				t.Errorf("got %s, want the approval_required envelope, the client not asked", raw)
			}
		})
	}
}
