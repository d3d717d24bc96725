package gateway

import (
	"context"
	"log/slog"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/server"

	"github.com/sluicehq/sluice/intercept"
)

// TestAnsweredCallsForgotten: what the interceptor notes of an allowed
// 2026-07-28 call, to bind a requestState its answer may carry, is
// forgotten once the answer has been passed on, on an HTTP upstream and on
// a stdio one (the shared stateless connection) — an issued state is still
// honoured on the retry, and nothing is left waiting after the exchanges.
// Kept, every call's note stayed until 20,000 had piled up: a growing
// table on every call's path.
func TestAnsweredCallsForgotten(t *testing.T) {
	up := httptest.NewServer(server.NewStreamableHTTPServer(mrtrServer()))
	t.Cleanup(up.Close)
	allow := intercept.DeciderFunc(func(context.Context, *intercept.ActionDescriptor) (intercept.Decision, error) {
		return intercept.Decision{Verdict: intercept.Allow, Reason: "allowed"}, nil
	})
	ic := &intercept.Interceptor{Decider: allow}
	g, err := New(Options{Upstreams: []Upstream{
		{Name: "http", URL: up.URL + "/mcp"},
		{Name: "stdio", Command: os.Args[0], Args: []string{"-test.run=^TestHelperMRTRStdio$"}, Env: map[string]string{"SLUICE_TEST_MRTR_STDIO": "1"}},
	}}, ic, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	gw := principalGateway(t, g)
	for _, route := range []string{"http", "stdio"} {
		t.Run(route, func(t *testing.T) {
			call := func(id, extra string) string {
				t.Helper()
				h := modernHeaders("tools/call", "deploy")
				h["X-Test-Principal"] = "alice"
				_, _, body := post(t, gw.URL+"/mcp/"+route, h, `{"jsonrpc":"2.0","id":`+id+`,"method":"tools/call","params":{"name":"deploy","arguments":{"environment":"staging"}`+extra+
					`,"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"alice","version":"1"},"io.modelcontextprotocol/clientCapabilities":{"elicitation":{}}}}}`)
				return body
			}
			for i := range 20 {
				id := itoa(i + 1)
				if first := call(id, ""); !strings.Contains(first, `"requestState":"env=staging"`) {
					t.Fatalf("deploy: %s, want input_required with the state env=staging", first)
				}
				retry := `,"inputResponses":{"confirm":{"action":"accept","content":{"approve":true}}},"requestState":"env=staging"`
				if got := call(id, retry); !strings.Contains(got, "deployed to staging") {
					t.Fatalf("the retry with the state issued: %s, want deployed to staging", got)
				}
			}
			if n := ic.AwaitingAnswers(); n != 0 {
				t.Errorf("after 40 answered calls, %d still await their answer, want 0", n)
			}
		})
	}
}
