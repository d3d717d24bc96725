package gateway

import (
	"log/slog"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/sluicehq/sluice/gateway/transport"
	"github.com/sluicehq/sluice/intercept"
)

// approving is an Observer and intercept.ToolScreener, as the inventory
// is: a tool it has recorded is shown as "approved", one it has not is
// left out.
type approving struct {
	mu   sync.Mutex
	seen map[string]bool
}

func (a *approving) ObserveTools(upstream string, result jsontext.Value) {
	var page struct {
		Tools []struct {
			Name string `json:"name"`
		} `json:"tools"`
	}
	if json.Unmarshal(result, &page) != nil {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, t := range page.Tools {
		a.seen[upstream+"/"+t.Name] = true
	}
}

func (a *approving) ScreenTools(upstream string, tools []jsontext.Value) []jsontext.Value {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := make([]jsontext.Value, len(tools))
	for i, it := range tools {
		var t struct {
			Name string `json:"name"`
		}
		if json.Unmarshal(it, &t) == nil && a.seen[upstream+"/"+t.Name] {
			out[i] = jsontext.Value(`{"name":"` + t.Name + `","description":"approved","inputSchema":{"type":"object"}}`)
		}
	}
	return out
}

var _ intercept.ToolScreener = (*approving)(nil)

// TestToolsListScreenedAfterRecorded: the client is shown each tool of a
// tools/list as the Observer (the inventory) lets it, on every path a
// listing takes, and the Observer has recorded the list by then, so what
// it shows is judged against what the upstream just sent (a drifted tool
// as pinned, a tool outside the pin not at all). The shared stdio
// connection of 2026-07-28 requests screened its answers before recording
// them.
func TestToolsListScreenedAfterRecorded(t *testing.T) {
	scr := &approving{seen: map[string]bool{}}
	jsonUp := httptest.NewServer(newLister().handler(false))
	t.Cleanup(jsonUp.Close)
	sseUp := httptest.NewServer(newLister().handler(true))
	t.Cleanup(sseUp.Close)
	g, err := New(Options{Upstreams: []Upstream{
		{Name: "json", URL: jsonUp.URL},
		{Name: "sse", URL: sseUp.URL},
		{Name: "stdio", Command: os.Args[0], Args: []string{"-test.run=^TestHelperListerStdio$"}, Env: map[string]string{"SLUICE_TEST_LISTER_STDIO": "1"}},
	}}, &intercept.Interceptor{Decider: &describing{seen: map[string]string{}}, Observer: scr}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	gw := httptest.NewServer(g.Handler())
	t.Cleanup(func() { closeServed(t, gw, g) })

	check := func(t *testing.T, list string) {
		t.Helper()
		freshTool(t, list) // shown, so recorded before it was screened
		if strings.Contains(list, "filler tool") || strings.Contains(list, "fresh tool") || !strings.Contains(list, `"description":"approved"`) {
			t.Errorf("got a list shown as the upstream sent it: %.300s", list)
		}
	}
	modern := func(t *testing.T, upstream string) {
		url := gw.URL + "/mcp/" + upstream
		check(t, postFirst(t, url, modernHeaders("tools/list", ""), `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"test","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}}}}`))
	}
	session := func(t *testing.T, upstream string) {
		url := gw.URL + "/mcp/" + upstream
		hdr := map[string]string{"Mcp-Session-Id": initialize(t, url), "Mcp-Protocol-Version": "2025-11-25"}
		check(t, postFirst(t, url, hdr, `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`))
	}
	ws := func(t *testing.T, upstream string) {
		c := dialWith(t, &transport.WSDialer{URL: "ws" + strings.TrimPrefix(gw.URL, "http") + "/ws/" + upstream})
		ctx := t.Context()
		roundTrip := func(msg string) string {
			t.Helper()
			if err := c.Write(ctx, []byte(msg)); err != nil {
				t.Fatal(err)
			}
			b, err := c.Read(ctx)
			if err != nil {
				t.Fatal(err)
			}
			return string(b)
		}
		roundTrip(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"ws","version":"1"}}}`)
		if err := c.Write(ctx, []byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)); err != nil {
			t.Fatal(err)
		}
		check(t, roundTrip(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
	}
	t.Run("mcp/2026-07-28/json", func(t *testing.T) { modern(t, "json") })
	t.Run("mcp/2026-07-28/sse", func(t *testing.T) { modern(t, "sse") })
	t.Run("mcp/2026-07-28/stdio", func(t *testing.T) { modern(t, "stdio") })
	t.Run("mcp/2025-11-25/json", func(t *testing.T) { session(t, "json") })
	t.Run("mcp/2025-11-25/sse", func(t *testing.T) { session(t, "sse") })
	t.Run("mcp/2025-11-25/stdio", func(t *testing.T) { session(t, "stdio") })
	t.Run("ws/json", func(t *testing.T) { ws(t, "json") })
	t.Run("ws/stdio", func(t *testing.T) { ws(t, "stdio") })
}
