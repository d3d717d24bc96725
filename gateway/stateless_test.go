package gateway

import (
	"fmt"
	"strings"
	"sync"
	"testing"
)

// TestStatelessSharedConnection sends concurrent 2026-07-28 calls that all
// use the same JSON-RPC id through one shared stdio connection: each client
// must get its own answer, with its own id.
func TestStatelessSharedConnection(t *testing.T) {
	f := newFixture(t, allowEcho, Options{Upstreams: []Upstream{{Name: "stdio", Command: buildDemoServer(t), Args: []string{"-transport", "stdio"}}}})
	var wg sync.WaitGroup
	errs := make(chan string, 20)
	for i := range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			msg := fmt.Sprintf("client-%d", i)
			status, _, body := post(t, f.gw.URL+"/mcp/stdio", modernHeaders("tools/call", "echo"), modernCall(1, "echo", `{"message":"`+msg+`"}`))
			if status != 200 || !strings.Contains(body, "Echo: "+msg+`"`) || !strings.Contains(body, `"id":1`) {
				errs <- fmt.Sprintf("%s: got %d %s", msg, status, body)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
	status, _, body := post(t, f.gw.URL+"/mcp/stdio", modernHeaders("tools/call", "send_email"), modernCall(2, "send_email", `{"to":"a","subject":"b","body":"c"}`))
	if status != 200 || !strings.Contains(body, `"status":"denied"`) {
		t.Errorf("denied stateless call: got %d %s", status, body)
	}
}
