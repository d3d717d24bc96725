package main

import (
	"bytes"
	"context"
	"io/fs"
	"log/slog"
	"path/filepath"
	"testing"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/sluicehq/sluice/intercept"
	"github.com/sluicehq/sluice/policy"
)

// The desktop example's policy does what the README says of it: reads of
// the shared folders allowed, keys refused, writes held for approval,
// fetch allowed until the chat has read a file.
func TestDesktopExamplePolicy(t *testing.T) {
	cfg, err := loadConfig("../../examples/desktop/sluice.yaml")
	if err != nil {
		t.Fatal(err)
	}
	d, _, err := cfg.decider(slog.New(slog.DiscardHandler), policy.NewMemoryStore(policy.MemoryOptions{}))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	call := func(up, tool, args, session string) intercept.Decision {
		t.Helper()
		desc := &intercept.ActionDescriptor{Upstream: up, ToolName: tool, Parameters: jsontext.Value(args), Agent: "claude", SessionID: session, TxnID: "t"}
		dec := intercept.Decide(ctx, d, desc)
		if dec.Verdict == intercept.Allow {
			if fo, ok := d.(intercept.ForwardObserver); ok {
				if err := fo.Forwarded(ctx, desc, dec); err != nil {
					t.Fatal(err)
				}
			}
		}
		return dec
	}
	for _, tt := range []struct {
		up, tool, args, session string
		want                    intercept.Verdict
		rule                    string
	}{
		{"fetch", "fetch", `{"url":"https://example.com"}`, "s1", intercept.Allow, "fetch"},
		{"filesystem", "read_text_file", `{"path":"/home/me/Documents/a.md"}`, "s1", intercept.Allow, "reads"},
		{"fetch", "fetch", `{"url":"https://example.com/?q=secret"}`, "s1", intercept.Deny, ""},
		// Another wrap is another session: the read still counts there.
		{"fetch", "fetch", `{"url":"https://example.com"}`, "s2", intercept.Deny, "no-fetch-after-reading-files"},
		{"filesystem", "read_text_file", `{"path":"/home/me/.ssh/id_ed25519"}`, "s2", intercept.Deny, "no-secrets"},
		{"filesystem", "read_multiple_files", `{"paths":["/home/me/Documents/a.md"]}`, "s3", intercept.Allow, "reads"},
		{"filesystem", "write_file", `{"path":"/home/me/Documents/b.md","content":"x"}`, "s3", intercept.RequireApproval, "writes"},
		{"filesystem", "write_file", `{"path":"/home/me/project/.env","content":"x"}`, "s3", intercept.Deny, "no-secrets"},
		// Every argument that names a file, however it is spelt (found by
		// an attacker review: read_multiple_files takes paths, move_file
		// source and destination, and the directory itself, a .env.local or
		// .SSH on a case-insensitive disk were not refused).
		{"filesystem", "read_multiple_files", `{"paths":["/home/me/Documents/a.md","/home/me/Documents/project/.env"]}`, "s5", intercept.Deny, "no-secrets"},
		{"filesystem", "list_directory", `{"path":"/home/me/.ssh"}`, "s5", intercept.Deny, "no-secrets"},
		{"filesystem", "read_text_file", `{"path":"/home/me/.SSH/id_ed25519"}`, "s5", intercept.Deny, "no-secrets"},
		{"filesystem", "read_text_file", `{"path":".ssh/id_ed25519"}`, "s5", intercept.Deny, "no-secrets"},
		{"filesystem", "read_text_file", `{"path":"C:\\Users\\me\\.aws\\credentials"}`, "s5", intercept.Deny, "no-secrets"},
		{"filesystem", "read_text_file", `{"path":"/home/me/project/.env.local"}`, "s5", intercept.Deny, "no-secrets"},
		{"filesystem", "move_file", `{"source":"/home/me/.ssh/id_ed25519","destination":"/home/me/Documents/k"}`, "s5", intercept.Deny, "no-secrets"},
		{"filesystem", "read_multiple_files", `{"paths":"/home/me/.ssh/id_ed25519"}`, "s5", intercept.Deny, "no-secrets"},
		{"filesystem", "read_text_file", `{"path":"/home/me/Documents/environment.md"}`, "s6", intercept.Allow, "reads"},
		{"filesystem", "move_file", `{"source":"/home/me/Documents/a.md","destination":"/home/me/Documents/b.md"}`, "s6", intercept.RequireApproval, "writes"},
		{"other", "read_text_file", `{"path":"/x"}`, "s4", intercept.Deny, ""},
	} {
		got := call(tt.up, tt.tool, tt.args, tt.session)
		if got.Verdict != tt.want || (tt.rule != "" && got.RuleID != tt.rule) {
			t.Errorf("%s/%s %s in %s: got %s (rule %q, %s), want %s (rule %q)", tt.up, tt.tool, tt.args, tt.session, got.Verdict, got.RuleID, got.Reason, tt.want, tt.rule)
		}
	}
}

// The README's quickstart builds bin/demo-server at the repository root
// and serves examples/sluice.yaml; commands in a config are relative to
// the config file, so the example must reach back to the root's bin/.
func TestQuickstartExampleCommand(t *testing.T) {
	cfg, err := loadConfig("../../examples/sluice.yaml")
	if err != nil {
		t.Fatal(err)
	}
	want, err := filepath.Abs("../../bin/demo-server")
	if err != nil {
		t.Fatal(err)
	}
	if got := cfg.Upstreams[0].Command; got != want {
		t.Errorf("examples/sluice.yaml's demo command resolves to %s, want %s (the quickstart's go build -o bin/demo-server)", got, want)
	}
}

// TestExampleConfigsValidate: every config under examples/ passes `sluice
// config validate`, so an example added later cannot ship unloadable.
func TestExampleConfigsValidate(t *testing.T) {
	var n int
	err := filepath.WalkDir("../../examples", func(path string, e fs.DirEntry, err error) error {
		if err != nil || e.IsDir() || (filepath.Ext(path) != ".yaml" && filepath.Ext(path) != ".yml") {
			return err
		}
		n++
		var out bytes.Buffer
		if err := validateConfig(path, nil, &out); err != nil {
			t.Errorf("sluice config validate %s: %v", path, err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n < 2 {
		t.Errorf("found %d configs under examples/, want at least examples/sluice.yaml and examples/desktop/sluice.yaml", n)
	}
}
