package main

import (
	"bytes"
	"context"
	"regexp"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/internal/deadpeer"
)

// TestCLIConvention: every verb answers -h and --help with its usage on
// stdout and exit 0, and every error is one `sluice: …` line on stderr
// (no log timestamp) with exit 1.
func TestCLIConvention(t *testing.T) {
	verbs := [][]string{
		{"serve"}, {"wrap"}, {"demo"}, {"approvals"}, {"approvals", "list"}, {"approvals", "approve"},
		{"replay"}, {"events"}, {"events", "query"}, {"policy"}, {"policy", "validate"}, {"policy", "test"},
		{"policy", "explain"}, {"inventory"}, {"inventory", "diff"}, {"keys"}, {"keys", "create"},
		{"bench"}, {"config"}, {"config", "validate"}, {"health"},
	}
	for _, v := range verbs {
		for _, h := range []string{"-h", "--help"} {
			args := append(append([]string{}, v...), h)
			t.Run(strings.Join(args, " "), func(t *testing.T) {
				var stdout, stderr bytes.Buffer
				rc := run(context.Background(), args, &stdout, &stderr)
				if rc != 0 {
					t.Errorf("got exit %d, want 0 (stderr %q)", rc, &stderr)
				}
				if !strings.Contains(stdout.String(), "usage:") || !strings.Contains(stdout.String(), "sluice "+v[0]) {
					t.Errorf("got stdout %q, want the usage of sluice %s", &stdout, v[0])
				}
				if stderr.Len() != 0 {
					t.Errorf("got stderr %q, want nothing", &stderr)
				}
			})
		}
	}
	stamp := regexp.MustCompile(`^\d{4}/\d\d/\d\d `)
	errs := [][]string{
		{"nope"}, {"serve", "--nope"}, {"serve", "--config", "/no/such/sluice.yaml"}, {"wrap"},
		{"wrap", "--url", "http://x", "--", "cmd"}, {"demo", "extra"}, {"approvals"}, {"approvals", "frob"},
		{"replay"}, {"replay", "--nope"}, {"events", "frob"}, {"policy"}, {"policy", "frob"},
		{"policy", "validate"}, {"policy", "explain"}, {"inventory"}, {"inventory", "frob"}, {"keys"},
		{"keys", "frob"}, {"bench", "--nope"}, {"config"}, {"config", "validate"},
		{"config", "validate", "/no/such/sluice.yaml"}, {"health", "--url", "http://" + deadpeer.Addr(t) + "/healthz"},
	}
	for _, args := range errs {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			rc := run(context.Background(), args, &stdout, &stderr)
			if rc != 1 {
				t.Errorf("got exit %d, want 1", rc)
			}
			e := stderr.String()
			if !strings.HasPrefix(e, "sluice: ") || strings.HasPrefix(e, "sluice: sluice:") || stamp.MatchString(e) {
				t.Errorf("got stderr %q, want one `sluice: …` message without a timestamp", e)
			}
		})
	}
	for _, args := range [][]string{{"--version"}, {"version"}} {
		var stdout, stderr bytes.Buffer
		if rc := run(context.Background(), args, &stdout, &stderr); rc != 0 || !strings.HasPrefix(stdout.String(), "sluice ") {
			t.Errorf("%v: got exit %d, stdout %q, want 0 and `sluice <version>`", args, rc, &stdout)
		}
	}
	var stdout, stderr bytes.Buffer
	if rc := run(context.Background(), []string{"help", "replay"}, &stdout, &stderr); rc != 0 || !strings.Contains(stdout.String(), "--events") {
		t.Errorf("help replay: got exit %d, stdout %q, want 0 and replay's flags", rc, &stdout)
	}
}

// TestHealth: `sluice health` passes against a running gateway's
// /healthz, the image's HEALTHCHECK.
func TestHealth(t *testing.T) {
	g := startServe(t, "policy: {default: allow}\n")
	var stdout, stderr bytes.Buffer
	url := strings.TrimSuffix(g.url, "/mcp/demo") + "/healthz"
	if rc := run(context.Background(), []string{"health", "--url", url}, &stdout, &stderr); rc != 0 {
		t.Errorf("health: got exit %d (%s), want 0", rc, &stderr)
	}
}
