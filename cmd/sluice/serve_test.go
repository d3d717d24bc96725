package main

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestShutdownDrainsInFlightCalls starts the gateway, begins a slow call,
// asks the gateway to stop while the call runs, and checks the call still
// completes and that new connections are refused.
func TestShutdownDrainsInFlightCalls(t *testing.T) {
	g := startServe(t, "policy: {default: allow}\nshutdown_timeout: 20s\n")
	addr := strings.TrimSuffix(strings.TrimPrefix(g.url, "http://"), "/mcp/demo")
	body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"slow_count","arguments":{"n":10,"delay_ms":100},` +
		`"_meta":{"progressToken":"p","io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"t","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}}}}`
	req, _ := http.NewRequest(http.MethodPost, "http://"+addr+"/mcp/demo", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", "2026-07-28")
	req.Header.Set("Mcp-Method", "tools/call")
	req.Header.Set("Mcp-Name", "slow_count")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	rd := bufio.NewReader(resp.Body)
	if _, err := rd.ReadString('\n'); err != nil {
		t.Fatalf("first event: %v", err)
	}
	served := make(chan error, 1)
	go func() { served <- g.stop() }() // SIGTERM, in effect, while the call is in flight
	rest, err := io.ReadAll(rd)
	if err != nil || !strings.Contains(string(rest), "counted to 10") {
		t.Fatalf("in-flight call after shutdown began: err %v, got %q, want its result", err, rest)
	}
	select {
	case err := <-served:
		if err != nil {
			t.Fatalf("serve: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("serve did not return after the drain")
	}
	if c, err := net.Dial("tcp", addr); err == nil {
		c.Close()
		t.Error("listener still accepts connections after shutdown")
	}
}

// TestUpstreamMetricsServed checks that serve passes its metrics to the
// gateway: a call forwarded to the upstream shows in
// sluice_upstream_duration_seconds on /metrics, a denied one does not.
func TestUpstreamMetricsServed(t *testing.T) {
	g := startServe(t, "policy: {default: allow, deny: [send_email], result_mode: tool_result}\ntelemetry: {prometheus: true}\n")
	modernCall(t, g.url, "tools/call", "echo", `{"name":"echo","arguments":{"message":"hi"}}`)
	modernCall(t, g.url, "tools/call", "send_email", `{"name":"send_email","arguments":{"to":"a","subject":"b","body":"c"}}`)
	count := regexp.MustCompile(`(?m)^sluice_upstream_duration_seconds_count\{[^}]*upstream="demo"[^}]*\} (\d+)`)
	// The call is measured once its answer is complete, just after the
	// client has it.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		resp, err := http.Get("http://" + g.admin + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		metrics, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if m := count.FindSubmatch(metrics); m != nil {
			if string(m[1]) != "1" {
				t.Errorf("upstream calls measured: got %s, want 1 (the denied call reaches no upstream)", m[1])
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("/metrics has no sluice_upstream_duration_seconds_count for upstream demo:\n%.4000s", metrics)
		}
	}
}
