package gateway

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/gateway/transport"
	"github.com/sluicehq/sluice/intercept"
)

// TestStatelessCrashForgetsCalls: a bridged upstream whose connection
// ended with 2026-07-28 calls pending (a WebSocket upstream going away:
// only stdio upstreams are restarted) had them answered with an error
// (statelessBridge.fail), but what the interceptor had noted of each, to
// bind a requestState its answer might carry, was never let go, as it is
// for a call answered (TestAnsweredCallsForgotten): each call pending
// when an upstream went away stayed in the table until 20,000 others had
// piled up behind it.
func TestStatelessCrashForgetsCalls(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := transport.AcceptWS(w, r, nil)
		if err != nil {
			return
		}
		c.Read(r.Context()) // the call, never answered: the connection ends
		c.Close()
	}))
	t.Cleanup(up.Close)
	allow := intercept.DeciderFunc(func(context.Context, *intercept.ActionDescriptor) (intercept.Decision, error) {
		return intercept.Decision{Verdict: intercept.Allow, Reason: "allowed"}, nil
	})
	ic := &intercept.Interceptor{Decider: allow}
	g, err := New(Options{Upstreams: []Upstream{{Name: "gone", Transport: TransportWebSocket, URL: "ws" + strings.TrimPrefix(up.URL, "http")}}},
		ic, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	gw := principalGateway(t, g)
	for i, who := range []string{"alice", "", "bob"} {
		h := modernHeaders("tools/call", "deploy")
		if who != "" {
			h["X-Test-Principal"] = who
		}
		_, _, body := post(t, gw.URL+"/mcp/gone", h, `{"jsonrpc":"2.0","id":`+itoa(i+1)+`,"method":"tools/call","params":{"name":"deploy","arguments":{},`+
			`"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"c","version":"1"},"io.modelcontextprotocol/clientCapabilities":{"elicitation":{}}}}}`)
		if !strings.Contains(body, `"error"`) {
			t.Fatalf("%q's call to an upstream that went away: %s, want an error", who, body)
		}
	}
	if n := ic.AwaitingAnswers(); n != 0 {
		t.Errorf("after 3 calls answered with their upstream's end, %d still await their answer, want 0", n)
	}
}
