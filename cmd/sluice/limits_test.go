package main

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestLimitsConfig checks that the resource limits reach the gateway's
// options and that impossible values are refused at load time, naming the
// key.
func TestLimitsConfig(t *testing.T) {
	cfg, err := parseConfig("test", []byte(`max_sessions: 500
max_sessions_per_agent: 20
max_sessions_per_client: 30
max_inflight_body_bytes: 67108864
max_answer_bytes: 1048576
upstreams:
  - {name: s, command: demo-server, max_children: 4}
`))
	if err != nil {
		t.Fatal(err)
	}
	o := cfg.options()
	if o.MaxSessions != 500 || o.MaxSessionsPerAgent != 20 || o.MaxSessionsPerClient != 30 || o.MaxInflightBodyBytes != 64<<20 || o.MaxAnswerBytes != 1<<20 || o.Upstreams[0].MaxChildren != 4 {
		t.Errorf("options: got %+v, want the configured limits", o)
	}
	for _, tc := range []struct{ yaml, key string }{
		{"max_sessions: -1\n", "max_sessions"},
		{"max_sessions_per_agent: -1\n", "max_sessions_per_agent"},
		{"max_sessions_per_client: -5\n", "max_sessions_per_client"},
		{"max_inflight_body_bytes: -1\n", "max_inflight_body_bytes"},
		{"max_answer_bytes: -1\n", "max_answer_bytes"},
		{"max_body_bytes: 1048576\nmax_inflight_body_bytes: 1000\n", "max_inflight_body_bytes"},
		{"upstreams: [{name: s, command: x, max_children: -1}]\n", "max_children"},
		{"upstreams: [{name: h, url: 'http://127.0.0.1:1/mcp', max_children: 4}]\n", "max_children"},
	} {
		_, err := parseConfig("test", []byte(tc.yaml))
		if err == nil || !strings.Contains(err.Error(), tc.key) {
			t.Errorf("%q: got error %v, want one naming %s", tc.yaml, err, tc.key)
		}
	}
}

// TestLimitMetricsServed checks that /metrics shows the gateway's resource
// use: open sessions by transport, request body bytes held, refusals by
// limit, and the Go runtime (goroutines, heap) and process.
func TestLimitMetricsServed(t *testing.T) {
	g := startServe(t, "policy: {default: allow}\ntelemetry: {prometheus: true}\nmax_sessions: 10\n")
	initialize := `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"m","version":"1"}}}`
	for range 2 { // one per agent at max_sessions 10: the second is refused
		req, _ := http.NewRequest(http.MethodPost, g.url, strings.NewReader(initialize))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	resp, err := http.Get("http://" + g.admin + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []*regexp.Regexp{
		regexp.MustCompile(`(?m)^sluice_sessions\{[^}]*transport="streamable-http"[^}]*\} 1$`),
		regexp.MustCompile(`(?m)^sluice_request_body_inflight_bytes(\{[^}]*\})? \d+$`),
		regexp.MustCompile(`(?m)^sluice_limit_refusals_total\{[^}]*limit="max_sessions_per_(agent|client)"[^}]*\} 1$`),
		regexp.MustCompile(`(?m)^go_goroutines \d+$`),
		regexp.MustCompile(`(?m)^go_memstats_heap_alloc_bytes \S+$`),
		regexp.MustCompile(`(?m)^process_resident_memory_bytes \S+$`),
	} {
		if !want.Match(b) {
			t.Errorf("/metrics has no line matching %s:\n%.3000s", want, b)
		}
	}
}

// TestStderrDroppedMetricServed: /metrics counts the lines of a stdio
// upstream's stderr that were not logged, by upstream: of 300 lines written
// at once about 100 are logged (the burst, and what the rate and the queue
// let through while they are read), the rest counted.
func TestStderrDroppedMetricServed(t *testing.T) {
	cfg, err := parseConfig("test", []byte(`policy: {default: allow}
telemetry: {prometheus: true}
upstreams:
  - {name: kid, command: sh, args: [-c, 'i=0; while [ $i -lt 300 ]; do echo noise >&2; i=$((i+1)); done; sleep 30']}
`))
	if err != nil {
		t.Fatal(err)
	}
	cfg.Listen, cfg.AdminListen, cfg.DataDir = "127.0.0.1:0", "127.0.0.1:0", t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	addrc := make(chan bound, 1)
	served := make(chan error, 1)
	go func() { served <- serve(ctx, cfg, slog.New(slog.DiscardHandler), func(at bound) { addrc <- at }) }()
	t.Cleanup(func() { cancel(); <-served })
	var at bound
	select {
	case at = <-addrc:
	case err := <-served:
		t.Fatalf("serve: %v", err)
	}
	// The child never answers: the initialize only starts it.
	initialize := `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"m","version":"1"}}}`
	reqCtx, stop := context.WithTimeout(ctx, time.Second)
	defer stop()
	if resp, err := openPost(reqCtx, "http://"+at.Listen+"/mcp/kid", nil, initialize); err == nil {
		resp.Body.Close()
	}
	want := regexp.MustCompile(`(?m)^sluice_stdio_stderr_dropped_total\{[^}]*upstream="kid"[^}]*\} (\d+)$`)
	var last string
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		resp, err := http.Get("http://" + at.Admin + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		last = "none"
		if m := want.FindSubmatch(b); m != nil {
			last = string(m[1])
			if n, _ := strconv.Atoi(last); n >= 150 && n <= 300 {
				return
			}
		}
	}
	t.Fatalf("/metrics: sluice_stdio_stderr_dropped_total{upstream=\"kid\"} is %s, want 150 to 300 of the 300 lines", last)
}
