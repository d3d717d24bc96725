package console

import (
	"regexp"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/approval"
)

// TestConsoleApprovalsPageFairToOthers: the Approvals page shows 8 MiB of
// held calls' arguments, and it took them oldest first, so an agent that
// held calls filling it before anyone else made every later call, of any
// other agent, decline-only there (found by review89). Each agent (each
// client address, for unauthenticated agents) now gets its oldest call
// shown before anyone's second.
func TestConsoleApprovalsPageFairToOthers(t *testing.T) {
	st := approval.NewStore(approval.Options{})
	const size = 1 << 20
	for i := range 12 {
		holdCall(t, st, "mallory", "send_email", `{"n":"`+string(rune('a'+i))+`","note":"`+strings.Repeat("x", size)+`"}`)
	}
	holdCall(t, st, "agent-a", "send_email", `{"to":"boss@corp.com","note":"`+strings.Repeat("y", size)+`"}`) // held last
	_, cl, base := reviewConsole(t, Deps{Approvals: st, KeepArguments: true})
	page := reviewGet(t, cl, base+"/approvals")
	for _, row := range regexp.MustCompile(`(?s)<tr data-id=.*?</tr>`).FindAllString(page, -1) {
		if strings.Contains(row, "<td>agent-a</td>") {
			if !strings.Contains(row, `<pre class="args">`) || !strings.Contains(row, `value="approve"`) {
				t.Errorf("agent-a's call, held after mallory's twelve, is not shown to approve:\n%.400s", row)
			}
			return
		}
	}
	t.Fatal("agent-a's call is not listed")
}
