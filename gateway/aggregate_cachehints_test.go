package gateway

import (
	"strings"
	"testing"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// TestAggregateCacheHints2026: MCP 2026-07-28 (SEP-2549) makes ttlMs and
// cacheScope required members of the results of server/discover,
// tools/list, prompts/list, resources/list and resources/templates/list.
// A virtual server's own answers to them had neither, and the MCP
// TypeScript SDK v2 client (@modelcontextprotocol/client 2.4.0) refuses
// such a result ("Invalid result for tools/list"): through a virtual
// server it could list nothing, and could not call a tool whose arguments
// go into Mcp-Param-* headers, which it learns from the list (found by
// trial85). They now say ttlMs 0 and cacheScope private: immediately
// stale, never shared, always true of a merged answer.
func TestAggregateCacheHints2026(t *testing.T) {
	f := newAggFixture(t, VirtualServer{Upstreams: []string{"demo", "other"}})
	for _, method := range []string{"server/discover", "tools/list", "prompts/list", "resources/list", "resources/templates/list"} {
		_, _, body := post(t, f.url+"/mcp", modernHeaders(method, ""), modernRequest(method, ""))
		var r struct {
			Result map[string]jsontext.Value `json:"result"`
		}
		if err := json.Unmarshal([]byte(body), &r); err != nil || r.Result == nil {
			t.Errorf("%s: got %.300s, want a result", method, body)
			continue
		}
		if ttl, scope := string(r.Result["ttlMs"]), string(r.Result["cacheScope"]); ttl != "0" || scope != `"private"` {
			t.Errorf("%s: ttlMs %q, cacheScope %q, want 0 and \"private\": %.300s", method, ttl, scope, strings.TrimSpace(body))
		}
	}
}
