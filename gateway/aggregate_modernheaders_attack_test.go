package gateway

import (
	"io"
	"net/http"
	"strings"
	"testing"
)

// TestAttackVirtualModernHeadersDisagree: SEP-2243 has a server refuse a
// request whose Mcp-Method, Mcp-Name or Mcp-Protocol-Version disagree
// with its body, so that what sits in front of it (a router, a WAF that
// refuses Mcp-Name: send_email) can act on the headers. A route does,
// each header once; a virtual server read only the first of each and
// never compared the version with _meta: a second Mcp-Name, which a
// filter in front may read instead of the first, or a 2025-11-25 header
// on a 2026-07-28 body, went through. Now it refuses them as a route does.
func TestAttackVirtualModernHeadersDisagree(t *testing.T) {
	f, _ := identityFixture(t, Options{VirtualServers: []VirtualServer{{}}})
	searches := func() int { return f.rec.count(`"web_search"`) }
	body := webSearch(1, "q", meta2026)
	for _, tc := range []struct {
		name string
		hdr  http.Header
	}{
		{"Mcp-Name twice", http.Header{"Mcp-Name": {"web_search", "read_document"}}},
		{"Mcp-Method twice", http.Header{"Mcp-Method": {"tools/call", "tools/list"}}},
		{"Mcp-Protocol-Version twice", http.Header{"Mcp-Protocol-Version": {"2026-07-28", "2025-11-25"}}},
		{"a 2025-11-25 header on a 2026-07-28 body", http.Header{"Mcp-Protocol-Version": {"2025-11-25"}}},
	} {
		for _, url := range []string{f.gw.URL + "/mcp/demo", f.gw.URL + "/mcp"} {
			req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			for k, v := range modernHeaders("tools/call", "web_search") {
				req.Header.Set(k, v)
			}
			for k, v := range tc.hdr {
				req.Header[k] = v
			}
			before := searches()
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(b), "-32020") || searches() != before {
				t.Errorf("%s, %s: got %d %.200s (forwarded %d times), want 400 with -32020 and nothing forwarded",
					url, tc.name, resp.StatusCode, b, searches()-before)
			}
		}
	}
	// The same call with its headers as the body says goes through.
	if code, _, b := post(t, f.gw.URL+"/mcp", modernHeaders("tools/call", "web_search"), body); code != 200 || !strings.Contains(b, "Top results") {
		t.Errorf("a well-formed call: %d %.200s", code, b)
	}
}
