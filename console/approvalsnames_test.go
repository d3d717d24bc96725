package console

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/sluicehq/sluice/approval"
	"github.com/sluicehq/sluice/intercept"
)

// TestConsoleApprovalsPageBoundedByToolNames: the Approvals page bounds
// the arguments it shows (maxShownArguments), but printed every held
// call's tool name whole, and an approval rule for a whole upstream
// holds any name, as long as a request (max_body_bytes): 12 held calls
// with 1 MiB names and no arguments made a 12 MiB page, the store's
// 256 MiB of held calls as many. A name counts against the same bound;
// a call past it is listed with its name cut (telemetry.BoundName), to
// decline.
func TestConsoleApprovalsPageBoundedByToolNames(t *testing.T) {
	st := approval.NewStore(approval.Options{})
	g := &approval.Gate{Store: st, Next: intercept.DeciderFunc(func(context.Context, *intercept.ActionDescriptor) (intercept.Decision, error) {
		return intercept.Decision{Verdict: intercept.RequireApproval, Reason: "upstream_requires_approval"}, nil
	})}
	hold := func(agent, tool string) {
		t.Helper()
		dec, err := g.Decide(context.Background(), &intercept.ActionDescriptor{Upstream: "mail", ToolName: tool, Agent: agent,
			Principal: &intercept.Principal{ID: agent}, TxnID: intercept.NewTxnID(), Parameters: jsontext.Value(`{}`)})
		if err != nil || dec.ApprovalID == "" {
			t.Fatalf("holding the call: %+v %v", dec, err)
		}
	}
	hold("agent-a", "send_email") // held first
	const calls = 12
	for i := range calls {
		hold(fmt.Sprintf("mallory-%d", i), fmt.Sprintf("t%d", i)+strings.Repeat("x", 1<<20))
	}
	_, cl, base := reviewConsole(t, Deps{Approvals: st})
	page := reviewGet(t, cl, base+"/approvals")
	if len(page) > maxShownArguments+1<<20 {
		t.Errorf("the Approvals page is %d MiB for %d held calls of 1 MiB tool names, want at most about %d MiB", len(page)>>20, calls+1, maxShownArguments>>20)
	}
	unshown := 0
	for _, row := range regexp.MustCompile(`(?s)<tr data-id=.*?</tr>`).FindAllString(page, -1) {
		switch {
		case strings.Contains(row, "send_email") && (!strings.Contains(row, `value="approve"`) || strings.Contains(row, "not shown")):
			t.Errorf("agent-a's call, held first, is not shown to approve:\n%.400s", row)
		case strings.Contains(row, "not shown"):
			unshown++
			if strings.Contains(row, `value="approve"`) {
				t.Errorf("a held call whose name is cut can be approved:\n%.400s", row)
			}
		}
	}
	if unshown == 0 {
		t.Error("every held call shown whole")
	}
}
