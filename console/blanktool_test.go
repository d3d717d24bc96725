package console

import (
	"html"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/approval"
)

// TestConsoleBlankPaddedToolNames: a held call's tool name is the
// agent's to write, and "send_email " (or send_email and a no-break
// space) read as send_email on the Approvals page, as padded agent names
// did before TestConsoleBlankPaddedNames: such tool names are quoted too.
func TestConsoleBlankPaddedToolNames(t *testing.T) {
	st := approval.NewStore(approval.Options{})
	holdCall(t, st, "agent-a", "send_email ", `{"to":"boss@corp.com"}`)
	_, cl, base := reviewConsole(t, Deps{Approvals: st})
	page := html.UnescapeString(reviewGet(t, cl, base+"/approvals"))
	if !strings.Contains(page, `"send_email "`) {
		t.Errorf("the held call of tool %q is not shown quoted:\n%.2000s", "send_email ", page)
	}
}

// TestConsoleBlankPaddedDecider: who decided a finished call is shown as
// names are, quoted when padded: without auth an operator's "by" is as
// written, and "alice " read as alice (left open by review98).
func TestConsoleBlankPaddedDecider(t *testing.T) {
	st := approval.NewStore(approval.Options{})
	holdCall(t, st, "agent-a", "send_email", `{"to":"boss@corp.com"}`)
	reqs, err := st.Current()
	if err != nil || len(reqs) != 1 {
		t.Fatalf("held: %v %v", reqs, err)
	}
	if _, err := st.Decide(reqs[0].ID, false, "alice "); err != nil {
		t.Fatal(err)
	}
	_, cl, base := reviewConsole(t, Deps{Approvals: st})
	page := html.UnescapeString(reviewGet(t, cl, base+"/approvals"))
	if !strings.Contains(page, `by "alice "`) {
		t.Errorf("the call declined by %q is not shown with the name quoted:\n%.3000s", "alice ", page)
	}
}
