package main

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/examples/demo-server/demo"
)

// jsonLines parses a JSON log.
func jsonLines(t *testing.T, s string) []map[string]any {
	var out []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(s), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("log line %q: %v", l, err)
		}
		out = append(out, m)
	}
	return out
}

// find returns the first log line with msg whose attributes include want.
func find(lines []map[string]any, msg string, want map[string]any) map[string]any {
	for _, l := range lines {
		if l["msg"] != msg {
			continue
		}
		ok := true
		for k, v := range want {
			if l[k] != v {
				ok = false
			}
		}
		if ok {
			return l
		}
	}
	return nil
}

// serveLogged runs serve with yaml (upstream "demo" added when up is not
// empty) until do returns, and returns its JSON log lines.
func serveLogged(t *testing.T, yaml, up string, do func(listen string)) []map[string]any {
	t.Helper()
	cfg, err := parseConfig("test", []byte(yaml))
	if err != nil {
		t.Fatal(err)
	}
	if up != "" {
		cfg2, err := parseConfig("test", []byte(yaml+"upstreams: [{name: demo, url: '"+up+"'}]\n"))
		if err != nil {
			t.Fatal(err)
		}
		cfg = cfg2
	}
	cfg.Listen, cfg.DataDir = "127.0.0.1:0", t.TempDir()
	var logs syncBuffer
	logger := slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	ready := make(chan bound, 1)
	go func() { served <- serve(ctx, cfg, logger, func(b bound) { ready <- b }) }()
	select {
	case b := <-ready:
		do(b.Listen)
	case err := <-served:
		t.Fatalf("serve: %v", err)
	}
	cancel()
	if err := <-served; err != nil {
		t.Fatalf("serve: %v", err)
	}
	return jsonLines(t, logs.String())
}

// TestStartupSummary: serve logs each route's URLs, the policy's version
// and rule counts, the classifier, the audit path; warns when there is no
// policy, no upstream or a missing command; and logs a first pin at INFO.
func TestStartupSummary(t *testing.T) {
	srv := httptest.NewServer(demo.NewHTTPHandler(demo.NewServer(demo.Options{}), demo.HTTPOptions{}))
	defer srv.Close()
	var addr string
	lines := serveLogged(t, "policy:\n  default: allow\n  deny: [send_email]\n  result_mode: tool_result\n", srv.URL+"/mcp", func(listen string) {
		addr = listen
		modernCall(t, "http://"+listen+"/mcp/demo", "tools/list", "", "")
	})
	if l := find(lines, "route", map[string]any{"upstream": "demo", "streamable_http": "http://" + addr + "/mcp/demo", "websocket": "ws://" + addr + "/ws/demo"}); l == nil {
		t.Errorf("no route line with the demo route's URLs in\n%v", lines)
	}
	if l := find(lines, "policy", map[string]any{"source": "inline"}); l == nil || l["version"] == "" || l["rules"] != float64(1) {
		t.Errorf("policy line: got %v, want the version and 1 rule", l)
	}
	if l := find(lines, "classifier", map[string]any{"provider": "builtin", "on_escalate": "log", "on_injection": "log"}); l == nil {
		t.Errorf("no classifier line in\n%v", lines)
	}
	if l := find(lines, "escalation: log only (on_escalate not set); injection: log only (on_injection not set)", nil); l == nil {
		t.Errorf("no escalation line in\n%v", lines)
	}
	if l := find(lines, "audit", map[string]any{"on_failure": "warn"}); l == nil || !strings.HasSuffix(l["path"].(string), "events.db") {
		t.Errorf("audit line: got %v, want the events.db path", l)
	}
	if l := find(lines, "inventory", map[string]any{"event": "sluice.inventory_pinned"}); l == nil || l["level"] != "INFO" {
		t.Errorf("inventory_pinned: got %v, want it at INFO", l)
	}

	// Virtual servers and A2A agents are served at URLs of their own, logged as a route's are.
	lines = serveLogged(t, "policy: {default: allow}\nvirtual_servers: [{}, {name: code, naming: prefix}]\nagents: [{name: research, url: 'https://research.example.com'}]\n", srv.URL+"/mcp", func(listen string) {
		addr = listen
	})
	if l := find(lines, "virtual server", map[string]any{"name": "", "upstreams": "demo", "naming": "on_collision", "streamable_http": "http://" + addr + "/mcp", "websocket": "ws://" + addr + "/ws"}); l == nil {
		t.Errorf("no virtual server line with /mcp in\n%v", lines)
	}
	if l := find(lines, "virtual server", map[string]any{"name": "code", "naming": "prefix", "sse": "http://" + addr + "/sse/code"}); l == nil {
		t.Errorf("no virtual server line with /sse/code in\n%v", lines)
	}
	if l := find(lines, "a2a agent", map[string]any{"agent": "research", "jsonrpc": "http://" + addr + "/a2a/research", "card": "http://" + addr + "/a2a/research/.well-known/agent-card.json"}); l == nil {
		t.Errorf("no a2a agent line with /a2a/research in\n%v", lines)
	}

	lines = serveLogged(t, "upstreams: [{name: fs, command: /no/such/mcp-server}]\n", "", func(string) {})
	for _, want := range []string{"no policy: every tools/call is denied", "upstreams[0] (fs): command \"/no/such/mcp-server\" not found"} {
		found := false
		for _, l := range lines {
			if l["level"] == "WARN" && strings.Contains(l["msg"].(string), want) {
				found = true
			}
		}
		if !found {
			t.Errorf("no WARN %q in\n%v", want, lines)
		}
	}
	lines = serveLogged(t, "policy: {default: allow}\n", "", func(string) {})
	if find(lines, "no upstreams: the gateway has nothing to route to; add upstreams: with a url or a command (fine for a config only sluice wrap uses: it names its upstream itself)", map[string]any{"level": "WARN"}) == nil {
		t.Errorf("no WARN about no upstreams in\n%v", lines)
	}
}

// TestEscalationSummary: the start-up summary says in one line what the
// escalation handler does: log only, or hold for whoever can answer.
func TestEscalationSummary(t *testing.T) {
	for _, tt := range []struct {
		yaml, admin, want string
	}{
		{"", "", "escalation: log only (on_escalate not set); injection: log only (on_injection not set)"},
		{"classifier: {on_escalate: approve, on_injection: deny}\n", "127.0.0.1:9090",
			"escalation: hold for operator approval on admin 127.0.0.1:9090; injection: deny (on_injection: deny)"},
		{"classifier: {on_escalate: approve}\n", "",
			"escalation: log only (on_escalate: approve, but nobody can answer: no admin_listen, approvals.client_may_answer off); injection: log only (on_injection not set)"},
		{"approvals: {client_may_answer: true}\nclassifier: {on_escalate: log, on_injection: approve}\n", "",
			"escalation: log only (on_escalate: log); injection: hold for the client's user where the client can be asked (elicitation, input_required), else log only"},
		{"approvals: {client_may_answer: true}\nclassifier: {on_escalate: approve}\n", "127.0.0.1:9090",
			"escalation: hold for operator approval on admin 127.0.0.1:9090 or the client's user where the client can be asked (elicitation, input_required); injection: log only (on_injection not set)"},
		{"classifier: {provider: off, on_escalate: approve}\n", "127.0.0.1:9090", "escalation: none (classifier off)"},
	} {
		cfg, err := parseConfig("test", []byte(tt.yaml))
		if err != nil {
			t.Fatal(err)
		}
		if got := escalationSummary(cfg, tt.admin); got != tt.want {
			t.Errorf("%q, admin %q:\ngot  %s\nwant %s", tt.yaml, tt.admin, got, tt.want)
		}
	}
	var admin string
	lines := serveLogged(t, "policy: {default: allow}\nadmin_listen: 127.0.0.1:0\nclassifier: {on_escalate: approve}\n", "", func(string) {})
	for _, l := range lines {
		if l["msg"] == "admin API listening" {
			admin, _ = l["addr"].(string)
		}
	}
	want := "escalation: hold for operator approval on admin " + admin + "; injection: log only (on_injection not set)"
	if admin == "" || find(lines, want, nil) == nil {
		t.Errorf("no line %q in\n%v", want, lines)
	}
}
