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

// TestConsoleApprovalsPageBoundedByBytes: with audit.keep_arguments the
// Approvals page shows every held call's arguments, and an agent chooses
// how many calls it has held (100 an agent, a tenth of the store's 10,000
// a client address) and how large each is (max_body_bytes, 4 MiB): the
// page of one address's held calls was 4 GiB of arguments, several times
// that once escaped, built in the gateway's memory and sent to the
// operator's browser. The page shows at most maxShownArguments of them,
// the oldest calls first; the others are listed, to be declined, with
// how large their arguments are and without an Approve button: nobody
// approves arguments they were not shown.
func TestConsoleApprovalsPageBoundedByBytes(t *testing.T) {
	st := approval.NewStore(approval.Options{})
	holdCall(t, st, "agent-a", "send_email", `{"to":"boss@corp.com"}`) // held first
	const calls, size = 12, 1 << 20
	for i := range calls {
		holdCall(t, st, "mallory", "send_email", `{"n":"`+string(rune('a'+i))+`0","note":"`+strings.Repeat("x", size)+`"}`)
	}
	_, cl, base := reviewConsole(t, Deps{Approvals: st, KeepArguments: true})
	page := reviewGet(t, cl, base+"/approvals")
	if len(page) > maxShownArguments+1<<20 {
		t.Errorf("the Approvals page is %d MiB for %d held calls of %d MiB, want at most about %d MiB", len(page)>>20, calls+1, size>>20, maxShownArguments>>20)
	}
	rows := regexp.MustCompile(`(?s)<tr data-id=.*?</tr>`).FindAllString(page, -1)
	if len(rows) != calls+1 {
		t.Fatalf("%d held calls listed, want %d", len(rows), calls+1)
	}
	unshown := 0
	for _, row := range rows {
		approve := strings.Contains(row, `value="approve"`)
		switch shown := strings.Contains(row, `<pre class="args">`); {
		case strings.Contains(row, "<td>agent-a</td>") && (!shown || !approve):
			t.Errorf("agent-a's call, held first, is not shown to approve:\n%.400s", row)
		case !shown:
			unshown++
			if approve || !strings.Contains(row, `value="decline"`) || !strings.Contains(row, "not shown") {
				t.Errorf("a held call whose arguments are not shown: Approve %v, want only Decline and why:\n%.600s", approve, row)
			}
		}
	}
	if unshown == 0 {
		t.Errorf("every held call's arguments shown (%d MiB page)", len(page)>>20)
	}
}

// Without audit.keep_arguments the page names what else a held call sends
// the upstream (each member beside its arguments), and an agent chooses
// how many members that is: 1 MiB of them made about 1.5 MiB of page a
// call, 36 MiB for the 25 calls here, 6 GiB for a client address's 1,000
// held calls of 4 MiB. They count against the same bound.
func TestConsoleApprovalsPageBoundedByNames(t *testing.T) {
	st := approval.NewStore(approval.Options{})
	holdCall(t, st, "agent-a", "send_email", `{"to":"boss@corp.com"}`) // held first
	var extra strings.Builder
	extra.WriteString("{")
	for i := 0; extra.Len() < 1<<20; i++ {
		fmt.Fprintf(&extra, `"params.m%07d":0,`, i)
	}
	raw := strings.TrimSuffix(extra.String(), ",") + "}"
	const calls = 25
	g := &approval.Gate{Store: st, Next: intercept.DeciderFunc(func(context.Context, *intercept.ActionDescriptor) (intercept.Decision, error) {
		return intercept.Decision{Verdict: intercept.RequireApproval, Reason: "rule", RuleID: "hold"}, nil
	})}
	for i := range calls {
		dec, err := g.Decide(context.Background(), &intercept.ActionDescriptor{Upstream: "mail", ToolName: "send_email", Agent: "mallory",
			TxnID: fmt.Sprint("t", i), Parameters: jsontext.Value(fmt.Sprintf(`{"n":%d}`, i)), CallExtra: jsontext.Value(raw)})
		if err != nil || dec.ApprovalID == "" {
			t.Fatalf("holding the call: %+v %v", dec, err)
		}
	}
	_, cl, base := reviewConsole(t, Deps{Approvals: st})
	page := reviewGet(t, cl, base+"/approvals")
	if len(page) > 2*maxShownArguments {
		t.Errorf("the Approvals page is %d MiB for %d held calls naming 1 MiB of members each, want at most about %d MiB", len(page)>>20, calls, 2*maxShownArguments>>20)
	}
	rows := regexp.MustCompile(`(?s)<tr data-id=.*?</tr>`).FindAllString(page, -1)
	unshown := 0
	for _, row := range rows {
		if strings.Contains(row, "<td>agent-a</td>") && (!strings.Contains(row, `value="approve"`) || strings.Contains(row, "not shown")) {
			t.Errorf("agent-a's call, held first, is not shown to approve:\n%.400s", row)
		}
		if strings.Contains(row, "not shown") {
			unshown++
			if strings.Contains(row, `value="approve"`) {
				t.Errorf("a held call whose members are not shown can be approved:\n%.600s", row)
			}
		}
	}
	if unshown == 0 {
		t.Errorf("every held call's members named (%d MiB page)", len(page)>>20)
	}
}
