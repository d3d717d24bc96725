package console

import (
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/approval"
)

// TestConsoleApprovalsLayoutCounted: the Approvals page counts the held
// calls' arguments against maxShownArguments as they are held, and a
// call's arguments are laid out (one value a line, indented by depth)
// when that takes at most twice their size and 64 KiB more: a call of
// 370 bytes nested 180 deep took about 64 KiB of page. Its 8 MiB bound
// counted 370 bytes of it, so the store's 10,000 held calls (ten client
// addresses, IPv6 /64s, without auth) made a page of 640 MB in the
// gateway's memory at each view; the 200 here, 13 MiB. What a call takes
// laid out is what counts.
func TestConsoleApprovalsLayoutCounted(t *testing.T) {
	const depth, calls = 175, 200
	st := approval.NewStore(approval.Options{})
	for i := range calls {
		args := fmt.Sprintf(`{"n":%d,"a":`, i) + strings.Repeat("[", depth) + strings.Repeat("]", depth) + `}`
		holdCall(t, st, fmt.Sprintf("mallory-%d", i/50), "send_email", args)
	}
	_, cl, base := reviewConsole(t, Deps{Approvals: st, KeepArguments: true})
	page := reviewGet(t, cl, base+"/approvals")
	if len(page) > maxShownArguments+1<<20 {
		t.Errorf("the Approvals page is %d MiB for %d held calls of %d bytes, want at most about %d MiB", len(page)>>20, calls, 2*depth+20, maxShownArguments>>20)
	}
	rows := regexp.MustCompile(`(?s)<tr data-id=.*?</tr>`).FindAllString(page, -1)
	if len(rows) != calls {
		t.Fatalf("%d held calls listed, want %d", len(rows), calls)
	}
	shown := 0
	for _, row := range rows {
		if strings.Contains(row, `<pre class="args">`) {
			shown++
		} else if strings.Contains(row, `value="approve"`) {
			t.Errorf("a held call whose arguments are not shown can be approved:\n%.300s", row)
		}
	}
	if shown == 0 {
		t.Error("no held call's arguments shown")
	}
}
