package main

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// A word a verb does not take was ignored, and the command did something
// else than asked: `sluice health http://127.0.0.1:9090/healthz` checked
// the default 127.0.0.1:8080 (another gateway, perhaps) and said ok;
// `sluice recommend --config c.yaml show ID` ran the engine; `sluice
// recommend show ID x --config c.yaml` said no --config was given;
// `sluice approvals list ID`, `sluice keys list ID` and `sluice recommend
// list ID` listed everything. Each is a usage error now.
func TestExtraArgumentRefused(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "sluice.yaml")
	if err := os.WriteFile(cfg, []byte("data_dir: data\npolicy: {default: deny}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	keys := filepath.Join(dir, "agent_keys.json")
	admin := []string{"--admin", "http://127.0.0.1:1", "--token", "t"}
	for _, c := range []struct {
		name string
		run  func(args []string, out *bytes.Buffer) error
		args []string
	}{
		{"health", func(a []string, o *bytes.Buffer) error { return runHealth(t.Context(), a, o) }, []string{"http://127.0.0.1:1/healthz"}},
		{"recommend", func(a []string, o *bytes.Buffer) error { return runRecommend(t.Context(), a, o) }, []string{"--config", cfg, "show", "rec_1"}},
		{"recommend", func(a []string, o *bytes.Buffer) error { return runRecommend(t.Context(), a, o) }, []string{"show", "rec_1", "x", "--config", cfg}},
		{"recommend", func(a []string, o *bytes.Buffer) error { return runRecommend(t.Context(), a, o) }, []string{"list", "rec_1", "--config", cfg}},
		{"approvals", func(a []string, o *bytes.Buffer) error { return runApprovals(t.Context(), a, o) }, append([]string{"list", "apr_1"}, admin...)},
		{"keys", func(a []string, o *bytes.Buffer) error { return runKeys(t.Context(), a, o) }, []string{"list", "k1", "--file", keys}},
		{"keys", func(a []string, o *bytes.Buffer) error { return runKeys(t.Context(), a, o) }, []string{"revoke", "k1", "k2", "--file", keys}},
	} {
		var out bytes.Buffer
		err := c.run(c.args, &out)
		var ue *usageError
		if !errors.As(err, &ue) {
			t.Errorf("%s %q: got %v, output %q; want a usage error", c.name, c.args, err, out.String())
		}
	}
}
