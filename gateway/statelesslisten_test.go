package gateway

import (
	"context"
	"io"
	"strings"
	"testing"
	"time"
)

// TestStatelessListenBridged: a 2026-07-28 client's subscriptions/listen
// to a bridged upstream (stdio, SSE, WebSocket) got nothing back. The
// upstream stamps the acknowledgement and every change notification of
// the subscription with the listen request's id in
// _meta["io.modelcontextprotocol/subscriptionId"], which on the shared
// connection is the gateway's id for it ("sluice-N"); the gateway
// correlated notifications by progress token only and dropped them as
// uncorrelated. The MCP TypeScript SDK v2 client, which opens a listen
// when asked to follow list changes, then waited 60 s for the
// acknowledgement and never heard of a change (found by trial85 with
// @modelcontextprotocol/client 2.4.0 against a v2 stdio server).
func TestStatelessListenBridged(t *testing.T) {
	up := listenScript(true)
	_, base := startScriptedGateway(t, up, Options{})
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second) // a failure bound, not a speed goal
	defer cancel()
	body := strings.Replace(modernRequest("subscriptions/listen", `"notifications":{"toolsListChanged":true},`), `"id":1`, `"id":"listen:0"`, 1)
	resp, err := sendPost(ctx, base+"/mcp/u", modernHeaders("subscriptions/listen", ""), body)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	got := string(b)
	for _, want := range []string{
		`"method":"notifications/subscriptions/acknowledged","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":"listen:0"}`,
		`"method":"notifications/tools/list_changed","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":"listen:0"}`,
		`"id":"listen:0","result"`,
	} {
		if !strings.Contains(got, want) {
			t.Errorf("the listen's stream lacks %s:\n%s", want, got)
		}
	}
	if strings.Contains(got, "sluice-") {
		t.Errorf("the gateway's own id for the listen reached the client:\n%s", got)
	}
}
