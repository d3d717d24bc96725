package console

import (
	"regexp"
	"strings"
	"testing"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/sluicehq/sluice/approval"
)

// TestConsoleApprovalsPageFairToOthersTwoOwners: the Approvals page takes
// each owner's oldest held call before anyone's second (a043122), but took
// the first calls in the order they were held: two owners (two client
// addresses, or two credentials) whose first calls, held before anyone
// else's, together take the page's 8 MiB left every later call of every
// other agent decline-only there, as one owner's calls did before. Each
// round takes the smaller calls first, so a large call waits for the small
// ones of the others, not they for it.
func TestConsoleApprovalsPageFairToOthersTwoOwners(t *testing.T) {
	st := approval.NewStore(approval.Options{})
	shown := func(agent, args string) int {
		return len("mail") + len("send_email") + len(agent) + shownSize(jsontext.Value(args))
	}
	first := `{"note":"` + strings.Repeat("x", 4<<20) + `"}`
	holdCall(t, st, "mallory-1", "send_email", first)
	// The second owner's call takes what room the first left, to a byte.
	left := maxShownArguments - shown("mallory-1", first)
	second := ""
	for pad := left - 64; ; pad++ {
		second = `{"note":"` + strings.Repeat("y", pad) + `"}`
		if n := shown("mallory-2", second); n >= left {
			second = `{"note":"` + strings.Repeat("y", pad-(n-left)) + `"}`
			break
		}
	}
	if shown("mallory-2", second) != left {
		t.Fatalf("the second call lays out as %d bytes, want %d", shown("mallory-2", second), left)
	}
	holdCall(t, st, "mallory-2", "send_email", second)
	holdCall(t, st, "agent-a", "send_email", `{"to":"boss@corp.com"}`) // held last
	_, cl, base := reviewConsole(t, Deps{Approvals: st, KeepArguments: true})
	page := reviewGet(t, cl, base+"/approvals")
	for _, row := range regexp.MustCompile(`(?s)<tr data-id=.*?</tr>`).FindAllString(page, -1) {
		if strings.Contains(row, "<td>agent-a</td>") {
			if !strings.Contains(row, `<pre class="args">`) || !strings.Contains(row, `value="approve"`) {
				t.Errorf("agent-a's call, held after two others' calls that fill the page, is not shown to approve:\n%.400s", row)
			}
			return
		}
	}
	t.Fatal("agent-a's call is not listed")
}
