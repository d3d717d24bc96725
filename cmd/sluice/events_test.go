package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/audit"
	"github.com/sluicehq/sluice/telemetry"
)

// TestEventsAndMetrics makes calls through a running gateway, stops it,
// and reads the correlated events back with `sluice events`; /metrics on
// the admin listener counts the decisions.
func TestEventsAndMetrics(t *testing.T) {
	g := startServe(t, "policy: {default: allow, deny: [send_email], result_mode: tool_result}\ntelemetry: {prometheus: true}\n")
	url, adminAddr, dir := g.url, g.admin, g.dir
	modernCall(t, url, "tools/call", "echo", `{"name":"echo","arguments":{"message":"hi","password":"hunter2"}}`)
	modernCall(t, url, "tools/call", "send_email", `{"name":"send_email","arguments":{"to":"a","subject":"b","body":"c"}}`)

	resp, err := http.Get("http://" + adminAddr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	metrics, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !regexp.MustCompile(`sluice_decisions_total\{[^}]*outcome="deny"`).Match(metrics) {
		t.Errorf("/metrics has no deny decision counter:\n%.2000s", metrics)
	}
	for _, name := range []string{"sluice_memory_store_size", "sluice_memory_store_evictions_total", "sluice_audit_queue_depth",
		"sluice_decision_duration_seconds_count", "sluice_classification_duration_seconds_count"} {
		if !regexp.MustCompile(`(?m)^` + name + `(\{[^}]*\})? \d`).Match(metrics) {
			t.Errorf("/metrics has no %s sample:\n%.4000s", name, metrics)
		}
	}
	if err := g.stop(); err != nil {
		t.Fatal(err)
	}

	var out bytes.Buffer
	db := filepath.Join(dir, audit.FileName)
	if err := runEvents(context.Background(), []string{"export", "--db", db}, &out); err != nil {
		t.Fatalf("events export: %v", err)
	}
	got := out.String()
	if strings.Contains(got, "hunter2") {
		t.Errorf("a secret argument reached the audit store:\n%s", got)
	}
	txn := regexp.MustCompile(`"type":"sluice.policy_enforced"[^\n]*"tool":"send_email"`).FindString(got)
	if txn == "" {
		t.Fatalf("no policy_enforced event for send_email:\n%s", got)
	}
	id := regexp.MustCompile(`"txn_id":"([0-9a-f]+)"`).FindStringSubmatch(txn)
	if id == nil || !regexp.MustCompile(`"type":"sluice.intent_classified"[^\n]*"txn_id":"`+id[1]+`"`).MatchString(got) {
		t.Errorf("no intent_classified event with the same txn_id %v:\n%s", id, got)
	}
	if !strings.Contains(got, `"classifier_id":"urn:sluice:classifier:`) || !strings.Contains(got, `"phase":"started"`) {
		t.Errorf("no session-scoped classifier identity or lifecycle event:\n%s", got)
	}
	out.Reset()
	if err := runEvents(context.Background(), []string{"query", "--db", db, "--decision", "deny", "--json"}, &out); err != nil || !strings.Contains(out.String(), "send_email") || strings.Contains(out.String(), `"tool":"echo"`) {
		t.Errorf("events query --decision deny: %v\n%s", err, &out)
	}
}

// TestRouteMemoryMetrics checks that the route memory's size reaches
// /metrics: after a call to a source tool, the memory holds it.
func TestRouteMemoryMetrics(t *testing.T) {
	g := startServe(t, `policy:
  default: allow
  tool_classes: {echo: ["source:sensitive"], send_email: ["sink:network"]}
  route_rules:
    - {id: no-exfil, after: {match_any_class: ["source:sensitive"]}, deny: {match_any_class: ["sink:network"]}, reason: no}
telemetry: {prometheus: true}
`)
	modernCall(t, g.url, "tools/call", "echo", `{"name":"echo","arguments":{"message":"hi"}}`)
	size := regexp.MustCompile(`(?m)^sluice_memory_store_size\{[^}]*\} (\d+)`)
	deadline := time.Now().Add(10 * time.Second)
	for {
		resp, err := http.Get("http://" + g.admin + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		metrics, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if m := size.FindSubmatch(metrics); m != nil && string(m[1]) != "0" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("sluice_memory_store_size never left 0 after a source call:\n%s", size.Find(metrics))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func TestAuditRetentionConfig(t *testing.T) {
	cfg, err := parseConfig("test", []byte("audit: {retention: 720h}\n"))
	if err != nil || cfg.Audit.Retention != 720*time.Hour {
		t.Errorf("audit.retention: 720h: got %v, %v", cfg.Audit.Retention, err)
	}
	if _, err := parseConfig("test", []byte("audit: {retention: -1h}\n")); err == nil || !strings.Contains(err.Error(), "audit.retention") {
		t.Errorf("negative audit.retention: got %v, want an error naming it", err)
	}
}

// TestEventsConfigSpellings reads the events of a config's data_dir with
// every spelling of --config the other verbs take: --config=FILE was
// refused ("flag provided but not defined: -config").
func TestEventsConfigSpellings(t *testing.T) {
	dir := t.TempDir()
	st, err := audit.Open(filepath.Join(dir, "data", audit.FileName), audit.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Append(context.Background(), telemetry.Event{Type: telemetry.TypePolicyEnforced, Time: time.Now(), Agent: "alice", Tool: "send_email"}); err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, "sluice.yaml")
	if err := os.WriteFile(cfg, []byte("data_dir: data\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"query", "--config", cfg},
		{"query", "--config=" + cfg},
		{"query", "-config", cfg},
		{"query", "-config=" + cfg, "--agent", "alice"},
	} {
		var out bytes.Buffer
		if err := runEvents(context.Background(), args, &out); err != nil || !strings.Contains(out.String(), "tool=send_email") {
			t.Errorf("events %q: %v\n%s", args, err, &out)
		}
	}
}
