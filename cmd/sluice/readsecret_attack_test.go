package main

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/audit"
)

// TestAttackReadURISecretsInRecord: a resources/read names its target by
// URI, and a URI carries credentials as readily as an argument does
// (https://user:pass@host/, ?sig=, ?X-Amz-Signature=). Spans scrub
// mcp.resource.uri; the audit record kept the read's name,
// resource:<URI>, whole in its tool field and its evidence, and the
// gateway's log in its decision line, so `sluice events`, the console,
// the export and the log showed the credentials the README says are
// redacted.
func TestAttackReadURISecretsInRecord(t *testing.T) {
	var logged syncBuffer
	logger, err := newLogger(&logged, "json", slog.LevelDebug)
	if err != nil {
		t.Fatal(err)
	}
	serveLogger = logger
	defer func() { serveLogger = nil }()
	policyYAML := "policy:\n  default: allow\n  result_mode: tool_result\n" +
		"  tool_classes: {\"resource:https://files.example.com/*\": [secret:files]}\n" +
		"  rules: [{id: no-files, match: {match_any_class: [secret:files]}, decision: deny}]\n"
	g := startServe(t, policyYAML)
	secrets := []string{"hunter2pass", "sigsecretvalue", "AKIAIOSFODNN7EXAMPLE"}
	for _, uri := range []string{
		"https://bob:hunter2pass@files.example.com/report.csv", // denied
		"https://blob.example.com/c/report.csv?sv=2024&sig=sigsecretvalue",
		"s3://bucket/key?X-Amz-Credential=x&X-Amz-Signature=sigsecretvalue&k=AKIAIOSFODNN7EXAMPLE",
		"https://files.example.com/x?api_key=" + strings.Repeat("k", 2000) + "&sig=sigsecretvalue", // denied, cut
	} {
		modernCall(t, g.url, "resources/read", uri, `{"uri":"`+uri+`"}`)
	}
	if err := g.stop(); err != nil {
		t.Fatal(err)
	}
	db := filepath.Join(g.dir, audit.FileName)
	for _, args := range [][]string{{"export", "--db", db}, {"query", "--db", db}, {"query", "--db", db, "--json"}} {
		var out bytes.Buffer
		if err := runEvents(context.Background(), args, &out); err != nil {
			t.Fatalf("events %v: %v", args, err)
		}
		if n := strings.Count(out.String(), "resource:"); n < 4 || !strings.Contains(out.String(), "deny") {
			t.Fatalf("events %v: got %d reads recorded, want 4, two denied:\n%s", args, n, &out)
		}
		for _, s := range secrets {
			if strings.Contains(out.String(), s) {
				t.Errorf("events %v: a read URI's credential %q reached the record:\n%s", args, s, &out)
			}
		}
	}
	// Replayed under the same policy, the reads recorded scrubbed are
	// decided as they were: userinfo, which the policy's normal form of a
	// URI leaves out anyway, is not recorded as [REDACTED] where it would
	// spoil that form.
	policyFile := filepath.Join(t.TempDir(), "policy.yaml")
	if err := os.WriteFile(policyFile, []byte(policyYAML), 0o600); err != nil {
		t.Fatal(err)
	}
	var replayed bytes.Buffer
	if err := runReplay(context.Background(), []string{"--events", db, "--policy", policyFile, "--json"}, &replayed, io.Discard); err != nil {
		t.Fatalf("replay: %v", err)
	}
	if strings.Contains(replayed.String(), "resource:") {
		t.Errorf("replay under the policy that decided the reads reports changes: %s", &replayed)
	}
	if !strings.Contains(logged.String(), `"msg":"decision"`) {
		t.Fatalf("no decision in the log:\n%s", logged.String())
	}
	for _, s := range secrets {
		if strings.Contains(logged.String(), s) {
			t.Errorf("a read URI's credential %q reached the log:\n%s", s, logged.String())
		}
	}
}
