package gateway

import (
	"context"
	"fmt"
	"log/slog"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

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

// TestTaskResultObserved: with OnResult (classifier.scan_results) and no
// WithholdResult, a tasks/result's answer, the result of a tools/call
// made a task, reaches OnResult as an action's result does: before, only
// the call's own answer (the task's handle) did, and an injection in the
// result the model reads went unrecorded.
func TestTaskResultObserved(t *testing.T) {
	s := server.NewMCPServer("taskserver", "1.0.0", server.WithToolCapabilities(true), server.WithTaskCapabilities(true, true, true))
	s.AddTool(mcp.NewTool("fetch_page", mcp.WithString("url", mcp.Required()), mcp.WithTaskSupport(mcp.TaskSupportOptional)),
		func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return mcp.NewToolResultText("the page of " + req.GetString("url", "")), nil
		})
	up := httptest.NewServer(server.NewStreamableHTTPServer(s))
	t.Cleanup(up.Close)
	var mu sync.Mutex
	var got []string
	ic := &intercept.Interceptor{Decider: &intercept.StaticDecider{Allow: []string{"fetch_page"}},
		OnResult: func(d *intercept.ActionDescriptor, result jsontext.Value) {
			mu.Lock()
			got = append(got, d.ToolName+" "+string(result))
			mu.Unlock()
		}}
	g, err := New(Options{Upstreams: []Upstream{{Name: "tasks", URL: up.URL + "/mcp"}}}, ic, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	u := principalGateway(t, g).URL + "/mcp/tasks"
	h := map[string]string{"Mcp-Protocol-Version": "2025-11-25", "X-Test-Principal": "alice", "Accept": "application/json"}
	_, rh, body := post(t, u, h, `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"tasks":{}},"clientInfo":{"name":"c","version":"1"}}}`)
	if rh.Get("Mcp-Session-Id") == "" {
		t.Fatalf("initialize: %s", body)
	}
	h["Mcp-Session-Id"] = rh.Get("Mcp-Session-Id")
	post(t, u, h, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	_, _, body = post(t, u, h, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"fetch_page","arguments":{"url":"docs"},"task":{}}}`)
	task := regexp.MustCompile(`"taskId":"([^"]+)"`).FindStringSubmatch(body)
	if task == nil {
		t.Fatalf("no task handle: %s", body)
	}
	if _, _, body = post(t, u, h, `{"jsonrpc":"2.0","id":2,"method":"tasks/result","params":{"taskId":"`+task[1]+`"}}`); !strings.Contains(body, "the page of docs") {
		t.Fatalf("tasks/result: %s", body)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		mu.Lock()
		seen := strings.Join(got, "\n")
		mu.Unlock()
		if strings.Contains(seen, "tasks/result ") && strings.Contains(seen, "the page of docs") {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("OnResult got %q, want the task's result under tasks/result", seen)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
