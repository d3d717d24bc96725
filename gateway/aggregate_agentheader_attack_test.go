package gateway

import (
	"io"
	"net/http"
	"strings"
	"testing"
)

// TestAttackVirtualModernAgentHeaderTwice: a route refuses a request
// whose agent header appears twice (a proxy in front that appends the
// agent it vouches for leaves the client's own value first, which the
// gateway would read). A 2026-07-28 request to a virtual server was not
// identified there at all: its inner request to the upstream's route
// carried only the first value, so mallory, whom the agent-scoped route
// rule had closed to the network after a sensitive read, sent web_search
// with "X-Agent: bob" before the proxy's "X-Agent: mallory" and was
// served as bob. Now the virtual server refuses it, as the route does.
func TestAttackVirtualModernAgentHeaderTwice(t *testing.T) {
	f, _ := identityFixture(t, Options{AgentHeader: "X-Agent", VirtualServers: []VirtualServer{{}}})
	send := func(url, tool, body string, agents ...string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		for k, v := range modernHeaders("tools/call", tool) {
			req.Header.Set(k, v)
		}
		for _, a := range agents {
			req.Header.Add("X-Agent", a)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	read := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"read_document","arguments":{"path":"/docs/handbook.md"},"_meta":{` + meta2026 + `}}}`
	search := func(id int) string { return webSearch(id, "exfil", meta2026) }
	if code, body := send(f.gw.URL+"/mcp", "read_document", read, "mallory"); code != 200 || !strings.Contains(body, "Handbook") {
		t.Fatalf("mallory's read_document: %d %s", code, body)
	}
	if _, body := send(f.gw.URL+"/mcp", "web_search", search(2), "mallory"); !routeDenied(body) {
		t.Fatalf("mallory's web_search after the read: %s, want the route rule's denial", body)
	}
	searches := func() int { return f.rec.count(`"web_search"`) }
	for _, url := range []string{f.gw.URL + "/mcp/demo", f.gw.URL + "/mcp"} {
		before := searches()
		code, body := send(url, "web_search", search(3), "bob", "mallory")
		if code != http.StatusBadRequest || !strings.Contains(body, "X-Agent") || searches() != before {
			t.Errorf("%s, web_search naming bob and mallory: got %d %.300s (upstream got it %d times), want 400 naming X-Agent and nothing forwarded",
				url, code, body, searches()-before)
		}
	}
	// bob, named once, is not mallory.
	if code, body := send(f.gw.URL+"/mcp", "web_search", search(4), "bob"); code != 200 || routeDenied(body) || strings.Contains(body, `"error"`) {
		t.Errorf("bob's own web_search: %d %.300s", code, body)
	}
}
