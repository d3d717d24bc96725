package console

import (
	"regexp"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/approval"
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
		holdCall(t, st, "mallory", "send_email", `{"n":`+string(rune('a'+i))+`0,"note":"`+strings.Repeat("x", size)+`"}`)
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
