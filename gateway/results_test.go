package gateway

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/sluicehq/sluice/intercept"
)

// TestResultsObserved: the result of every allowed tools/call reaches the
// interceptor's OnResult with the call's own descriptor, on the relayed,
// bridged and shared stateless paths.
func TestResultsObserved(t *testing.T) {
	var mu sync.Mutex
	got := map[string]string{} // txn -> result text
	f := newFixture(t, allowEcho, Options{Upstreams: []Upstream{{Name: "stdio", Command: buildDemoServer(t), Args: []string{"-transport", "stdio"}}}})
	f.g.ic.OnResult = func(d *intercept.ActionDescriptor, result jsontext.Value) {
		mu.Lock()
		got[d.Upstream+"/"+d.ToolName+"/"+string(d.Parameters)] = string(result)
		mu.Unlock()
	}
	for _, route := range []string{"demo", "stdio"} {
		url := f.gw.URL + "/mcp/" + route
		post(t, url, modernHeaders("tools/call", "echo"), modernCall(1, "echo", `{"message":"stateless-`+route+`"}`))
		sid := initialize(t, url)
		post(t, url, map[string]string{"Mcp-Session-Id": sid, "Mcp-Protocol-Version": "2025-11-25"},
			`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"message":"session-`+route+`"}}}`)
	}
	// A relayed result is observed after it is passed on, so the client
	// can have it a moment before OnResult runs: wait for all four.
	deadline := time.Now().Add(5 * time.Second)
	for {
		var missing []string
		mu.Lock()
		for _, route := range []string{"demo", "stdio"} {
			for _, kind := range []string{"stateless", "session"} {
				key := route + `/echo/{"message":"` + kind + "-" + route + `"}`
				if !strings.Contains(got[key], "Echo: "+kind+"-"+route) {
					missing = append(missing, fmt.Sprintf("%s: got result %q, want the echo", key, got[key]))
				}
			}
		}
		mu.Unlock()
		if len(missing) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal(strings.Join(missing, "\n"))
		}
		time.Sleep(10 * time.Millisecond)
	}
}
