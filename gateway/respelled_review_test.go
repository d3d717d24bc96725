package gateway

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/sluicehq/sluice/intercept"
)

// TestAttackRespelledResultOnCallStream (found reading the stream code):
// on a tools/call's event stream, an answer whose id is spelled otherwise
// (1.0 for 1) does not decode as the gateway reads JSON-RPC, so its result
// was neither scanned nor recorded, and it went on to the client, which
// reads 1.0 as 1 (JavaScript numbers) and takes it as its call's result.
// It must not be delivered; the call gets an error instead.
func TestAttackRespelledResultOnCallStream(t *testing.T) {
	for _, id := range []string{"1.0", "1e0", "10E-1"} {
		t.Run(id, func(t *testing.T) {
			event := `{"jsonrpc":"2.0","id":` + id + `,"result":{"content":[{"type":"text","text":"` + poisoned + `"}]}}`
			up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/event-stream")
				io.WriteString(w, "event: message\ndata: "+event+"\n\n")
			}))
			defer up.Close()
			var mu sync.Mutex
			scanned := 0
			ic := &intercept.Interceptor{Decider: allowEcho, OnResult: func(*intercept.ActionDescriptor, jsontext.Value) {
				mu.Lock()
				scanned++
				mu.Unlock()
			}}
			g, err := New(Options{Upstreams: []Upstream{{Name: "demo", URL: up.URL + "/mcp"}}}, ic, slog.New(slog.DiscardHandler))
			if err != nil {
				t.Fatal(err)
			}
			gw := httptest.NewServer(g.Handler())
			defer closeServed(t, gw, g)
			req, _ := http.NewRequest(http.MethodPost, gw.URL+"/mcp/demo", strings.NewReader(modernCall(1, "echo", `{"message":"hi"}`)))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			for k, v := range modernHeaders("tools/call", "echo") {
				req.Header.Set(k, v)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			mu.Lock()
			defer mu.Unlock()
			if strings.Contains(string(b), poisoned) && scanned == 0 {
				t.Errorf("a result under id %s reached the client unscanned: %s", id, b)
			}
			if !strings.Contains(string(b), `"error"`) || !strings.Contains(string(b), `"id":1`) {
				t.Errorf("the call got no error answering it: %s", b)
			}
		})
	}
}
