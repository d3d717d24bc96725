package policy

import (
	"bytes"
	"context"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/intercept"
)

// TestReloadAddedRouteRuleSaysWhatItMisses: route memory keeps only the
// labels some route rule's after side names, so a rule a reload adds
// sees the reads of its labels made from then on, not before: an agent
// that read a source:sensitive tool while no rule named it may call the
// sink the new rule denies. The reload now says so, naming the labels;
// a reload that remembers nothing new says nothing of it.
func TestReloadAddedRouteRuleSaysWhatItMisses(t *testing.T) {
	path := filepath.Join(t.TempDir(), "policy.yaml")
	classesOnly := "default: allow\ntool_classes:\n  read_document: [source:sensitive]\n  web_search: [sink:network]\n"
	write(t, path, classesOnly)
	var logs bytes.Buffer
	w, err := NewWatcher(path, WatchOptions{Options: Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))}})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	src := call("read_document")
	w.Forwarded(ctx, src, intercept.Decide(ctx, w, src))

	write(t, path, routePolicy)
	if err := w.Reload(); err != nil {
		t.Fatal(err)
	}
	warn := ""
	for l := range strings.Lines(logs.String()) {
		if strings.Contains(l, "level=WARN") && strings.Contains(l, "route") {
			warn = l
		}
	}
	if !strings.Contains(warn, "source:sensitive") || !strings.Contains(warn, "before") {
		t.Errorf("reload adding a route rule on source:sensitive: log %q, want a warning naming the label and that earlier reads are not remembered", logs.String())
	}
	// The gap it names: the sink is allowed, as the warning says.
	if got := intercept.Decide(ctx, w, call("web_search")); got.Verdict != intercept.Allow {
		t.Errorf("web_search after a read made before the rule: %s %s (the warning would be wrong)", got.Verdict, got.Reason)
	}
	logs.Reset()
	write(t, path, routePolicy+"deny: [web_fetch]\n")
	if err := w.Reload(); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(logs.String(), "level=WARN") {
		t.Errorf("a reload remembering nothing new: %q, want no warning", logs.String())
	}
}
