package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestAttackApproveUnseenVersion: an operator reviews a drifted tool with
// `sluice inventory diff` and approves it; the upstream (the demo server,
// mcp-go) changed the tool again in between, and the approval pinned the
// version no one reviewed. The admin API and the CLI take the hash the
// diff showed (--hash) and refuse, 409 stale, a tool that is no longer
// at it, as the console does; `pin --hash` likewise for the whole list.
func TestAttackApproveUnseenVersion(t *testing.T) {
	g := startServe(t, "policy: {default: allow, result_mode: tool_result}\n")
	ctx, url := context.Background(), g.url
	search := func() string {
		return modernCall(t, url, "tools/call", "web_search", `{"name":"web_search","arguments":{"query":"sluice"}}`)
	}
	rotate := func() {
		modernCall(t, url, "tools/call", "rotate_description", `{"name":"rotate_description","arguments":{}}`)
		modernCall(t, url, "tools/list", "", "")
	}
	b, err := os.ReadFile(filepath.Join(g.dir, adminTokenFile))
	if err != nil {
		t.Fatal(err)
	}
	token := strings.TrimSpace(string(b))
	base := "http://" + g.admin + "/admin/inventory/demo"
	observed := func() (tool, list string) {
		var res struct {
			Diff struct {
				Observed struct{ Hash string } `json:"observed"`
				Changes  []struct {
					Tool         string `json:"tool"`
					ObservedHash string `json:"observed_hash"`
				} `json:"changes"`
			} `json:"diff"`
		}
		if err := adminCall(ctx, "GET", base+"/diff", token, nil, &res); err != nil {
			t.Fatal(err)
		}
		for _, c := range res.Diff.Changes {
			if c.Tool == "web_search" {
				tool = c.ObservedHash
			}
		}
		return tool, res.Diff.Observed.Hash
	}

	modernCall(t, url, "tools/list", "", "") // pinned
	rotate()                                 // revision 1: drift
	reviewed, reviewedList := observed()
	if reviewed == "" {
		t.Fatal("no drift of web_search to review")
	}
	rotate() // revision 2, unseen
	var res map[string]any
	err = adminCall(ctx, "POST", base+"/approve", token, []byte(`{"tool":"web_search","hash":"`+reviewed+`"}`), &res)
	if err == nil || !strings.Contains(err.Error(), "409") {
		t.Errorf("admin API approving the reviewed version after another change: %v, want 409 stale", err)
	}
	admin := []string{"--admin", "http://" + g.admin, "--config", g.config}
	var out bytes.Buffer
	if err := runInventory(ctx, append([]string{"approve", "demo", "web_search", "--hash", reviewed}, admin...), &out); err == nil {
		t.Errorf("sluice inventory approve --hash of the reviewed version after another change: approved\n%s", &out)
	}
	if err := runInventory(ctx, append([]string{"pin", "demo", "--hash", reviewedList}, admin...), &out); err == nil {
		t.Errorf("sluice inventory pin --hash of the reviewed list after another change: pinned\n%s", &out)
	}
	if got := search(); !strings.Contains(got, `"code":"inventory_drift"`) {
		t.Fatalf("web_search after refused approvals: %.300s, want it still blocked", got)
	}

	// The diff's text names the version to approve in full; approved by
	// it, the tool is allowed.
	out.Reset()
	if err := runInventory(ctx, append([]string{"diff", "demo"}, admin...), &out); err != nil {
		t.Fatal(err)
	}
	current, _ := observed()
	if !strings.Contains(out.String(), current) {
		t.Errorf("inventory diff does not show web_search's observed hash %s in full:\n%s", current, &out)
	}
	out.Reset()
	if err := runInventory(ctx, append([]string{"approve", "demo", "web_search", "--hash", current}, admin...), &out); err != nil {
		t.Fatalf("sluice inventory approve --hash of the current version: %v", err)
	}
	if got := search(); strings.Contains(got, "inventory_drift") {
		t.Errorf("web_search after its approval: %.300s", got)
	}
	var listed map[string]any
	if err := json.Unmarshal(out.Bytes(), &listed); err != nil || listed["approved"] != "web_search" {
		t.Errorf("approve's reply: %v %s", err, &out)
	}
}
