package bench

import (
	"net/http/httptest"
	"net/url"
	"testing"
	"time"

	"github.com/sluicehq/sluice/examples/demo-server/demo"
)

// TestDemoServer makes the benchmark's call against the real demo server,
// directly and through the bare proxy, so that a change in what the server
// accepts shows up here and not as a benchmark full of errors.
func TestDemoServer(t *testing.T) {
	up := httptest.NewServer(demo.NewHTTPHandler(demo.NewServer(demo.Options{}), demo.HTTPOptions{JSONResponse: true}))
	defer up.Close()
	upURL, err := url.Parse(up.URL)
	if err != nil {
		t.Fatal(err)
	}
	bare := httptest.NewServer(NewBareProxy(upURL, BareProxyOptions{}))
	defer bare.Close()
	pooled := httptest.NewServer(NewBareProxy(upURL, BareProxyOptions{IdleConnsPerHost: 8}))
	defer pooled.Close()

	client := NewClient(8)
	defer client.CloseIdleConnections()
	for name, u := range map[string]string{"direct": up.URL + "/mcp", "bare": bare.URL + "/mcp", "bare-pooled": pooled.URL + "/mcp"} {
		t.Run(name, func(t *testing.T) {
			call := &ToolCall{Client: client, URL: u, Tool: demo.ToolEcho, Arguments: `{"message":"hi"}`, Want: "Echo: hi"}
			res := Run(t.Context(), Options{Concurrency: 4, Duration: 50 * time.Millisecond}, call.Do)
			if res.Errors > 0 {
				t.Fatalf("%d of %d calls failed, e.g. %v", res.Errors, res.Errors+res.Calls, res.FirstErr)
			}
			if res.Calls == 0 {
				t.Error("no calls made")
			}
		})
	}
}
