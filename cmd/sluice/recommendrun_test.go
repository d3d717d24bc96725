package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/audit"
	"github.com/sluicehq/sluice/recommend"
)

// TestRecommendApprovalOutlivesRun: a run's Merge drops a pending
// recommendation it no longer proposes (its evidence out of the window,
// or pushed past MaxPerType by other names). A run (the schedule's, or
// `sluice recommend run` in another process) that did so while an
// operator's approval was being applied left the policy file changed and
// the decision unstored: "the policy was changed … but the decision could
// not be stored: no recommendation". The approval is stored, as applied.
func TestRecommendApprovalOutlivesRun(t *testing.T) {
	dir := t.TempDir()
	pol := filepath.Join(dir, "policy.yaml")
	const src = "default: allow\nmanifests:\n  agent-a: {allowed_classes: [source:local]}\n"
	if err := os.WriteFile(pol, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	data := filepath.Join(dir, "data")
	cfg, err := parseConfig("c.yaml", []byte("data_dir: "+data+"\npolicy_file: "+pol+"\n"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(data, 0o700); err != nil {
		t.Fatal(err)
	}
	events, err := audit.Open(filepath.Join(data, audit.FileName), audit.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer events.Close()
	rc, err := newRecommender(cfg, events)
	if err != nil {
		t.Fatal(err)
	}
	rec := recommend.Recommendation{ID: "rec_0", Type: recommend.AddTool, Agent: "agent-a",
		Change: recommend.Change{Path: []string{"manifests", "agent-a", "allowed_classes"}, Operation: "add", Value: []string{"sink:network"}}}
	if _, err := rc.store.Merge([]recommend.Recommendation{rec}, time.Now()); err != nil {
		t.Fatal(err)
	}
	// The run comes once the approval has read the recommendation: the
	// audit store is empty, so it proposes nothing.
	ran, running := false, false
	rc.now = func() time.Time {
		if !ran && !running {
			running = true
			if _, err := rc.run(context.Background()); err != nil {
				t.Errorf("run: %v", err)
			}
			ran, running = true, false
		}
		return time.Now()
	}
	got, _, err := rc.approve(context.Background(), "rec_0", "ops")
	if !ran {
		t.Fatal("no run came during the approval")
	}
	if err != nil {
		t.Errorf("approve with a run meanwhile: %v", err)
	}
	if got.Status != recommend.StatusApproved {
		t.Errorf("approve returned %s, want approved", got.Status)
	}
	if b, _ := os.ReadFile(pol); !strings.Contains(string(b), "sink:network") {
		t.Fatalf("the policy was not changed:\n%s", b)
	}
	stored, err := rc.store.Get("rec_0")
	if err != nil || stored.Status != recommend.StatusApproved || stored.Decision == nil || stored.Decision.DecidedBy != "ops" {
		t.Errorf("stored: %+v, %v; want rec_0 approved by ops (the policy holds its change)", stored, err)
	}
}
