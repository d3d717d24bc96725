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
