package gateway

import (
	"context"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// TestStatelessUpstreamAskAnswered: an upstream serving a 2026-07-28
// request over a bridged connection (stdio, SSE, WebSocket) that asks the
// client something (elicitation/create, sampling, roots) got no answer:
// the gateway relays no server requests to stateless clients and dropped
// it, so the upstream's tool waited on it for good and so did the
// client's call. Now the gateway answers the upstream's request itself, a
// ping with {} and anything else with method-not-found naming why, as its
// own listing connection does, and the upstream's tool goes on.
func TestStatelessUpstreamAskAnswered(t *testing.T) {
	var mu sync.Mutex
	var callID jsontext.Value
	up := &scriptUpstream{handle: func(msg []byte) [][]byte {
		var r struct {
			reqView
			Error *struct {
				Code int `json:"code"`
			} `json:"error"`
		}
		if json.Unmarshal(msg, &r) != nil {
			return nil
		}
		switch {
		case r.Method == "tools/call":
			mu.Lock()
			callID = r.ID
			mu.Unlock()
			return [][]byte{
				[]byte(`{"jsonrpc":"2.0","id":"ask-ping","method":"ping"}`),
				[]byte(`{"jsonrpc":"2.0","id":"ask-1","method":"elicitation/create","params":{"message":"Proceed?","requestedSchema":{"type":"object","properties":{}}}}`),
			}
		case string(r.ID) == `"ask-1"` && r.Error != nil:
			mu.Lock()
			id := callID
			mu.Unlock()
			return [][]byte{[]byte(`{"jsonrpc":"2.0","id":` + string(id) + `,"result":{"content":[{"type":"text","text":"asked and refused: ` + itoa(r.Error.Code) + `"}],"isError":true}}`)}
		}
		return nil
	}}
	_, base := startScriptedGateway(t, up, Options{})
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second) // a failure bound, not a speed goal
	defer cancel()
	resp, err := sendPost(ctx, base+"/mcp/u", modernHeaders("tools/call", "echo"), modernCall(1, "echo", `{"message":"hi"}`))
	if err != nil {
		t.Fatalf("the call got no answer: %v (the upstream's question to the client was never answered)", err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(b), "asked and refused: -32601") {
		t.Errorf("got %s, want the upstream's answer after its question was refused with -32601", b)
	}
	var pinged bool
	for _, m := range up.got() {
		if strings.Contains(string(m), `"id":"ask-ping"`) && strings.Contains(string(m), `"result":{}`) {
			pinged = true
		}
	}
	if !pinged {
		t.Errorf("the upstream's ping was not answered with {}")
	}
}
