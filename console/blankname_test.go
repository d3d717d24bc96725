package console

import (
	"context"
	"fmt"
	"html"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/approval"
	"github.com/sluicehq/sluice/audit"
	"github.com/sluicehq/sluice/telemetry"
)

// TestConsoleBlankPaddedNames: without auth an agent's name is what its
// client calls itself, and white space a page does not show is as good
// as an invisible character: "alice " (or a tab or line break after it)
// shows as alice in a table cell, which drops white space at its ends,
// and so do "alice" with a no-break space, an ideographic space or a
// blank Braille pattern, which show as a blank. Each one's held call read
// as alice's on the Approvals page; a policy knows none of them as alice.
// Such a name is quoted now, its other blanks spelt out.
func TestConsoleBlankPaddedNames(t *testing.T) {
	aliceCell := regexp.MustCompile(`<td>[\s\p{Zs}\x{2800}]*alice[\s\p{Zs}\x{2800}]*</td>`)
	for _, agent := range []string{"alice ", " alice", "alice\t", "alice\n", "alice\u00a0", "alice\u3000", "alice\u2007", "alice\u2800", "al  ice"} {
		st := approval.NewStore(approval.Options{})
		holdCall(t, st, `"alice "`, "send_email", `{}`) // its quotes its own: not shown as "alice "'s
		holdCall(t, st, agent, "send_email", `{}`)
		holdCall(t, st, "alice", "send_email", `{}`)
		_, cl, base := reviewConsole(t, Deps{Approvals: st})
		page := reviewGet(t, cl, base+"/approvals")
		if n := len(aliceCell.FindAllString(page, -1)); n != 1 {
			t.Errorf("agent %q: %d held calls read as alice's on the Approvals page, want only alice's own", agent, n)
		}
		if agent == "al  ice" && !strings.Contains(html.UnescapeString(page), `"al  ice"`) {
			t.Errorf("agent %q is not shown quoted (HTML shows two spaces as one):\n%s", agent, page)
		}
		if agent == "alice " && strings.Count(html.UnescapeString(page), `<td>"alice "</td>`) != 1 {
			t.Errorf("agent %q is not shown quoted, or another's name reads as it quoted:\n%s", agent, page)
		}
		for _, r := range agent {
			if r > 0x7f && strings.ContainsRune(page, r) {
				t.Errorf("agent %q: U+%04X shown raw, want it spelt out (%s)", agent, r, fmt.Sprintf(`\u{%04X}`, r))
			}
		}
	}
}

// TestConsoleAgentLinkShowsThatAgent: the Agents page links each agent
// to the decisions filtered by its name. The filter trimmed white space,
// so the link of the agent "alice " showed alice's decisions, not its
// own: an operator checking what "alice " had been doing read alice's
// record. The filter takes the name as it is now.
func TestConsoleAgentLinkShowsThatAgent(t *testing.T) {
	ev, err := audit.Open(filepath.Join(t.TempDir(), "events.db"), audit.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer ev.Close()
	ctx := context.Background()
	for i, c := range []struct{ agent, tool string }{{"alice", "read_inbox"}, {"alice ", "send_email"}, {"alice\u00a0", "delete_all"}} {
		if err := ev.Append(ctx, telemetry.PolicyEnforcement{Time: time.Now(), TxnID: fmt.Sprint("txn", i), Agent: c.agent, Upstream: "mail",
			Tool: c.tool, Decision: "allow", Reason: "rule"}.Event()); err != nil {
			t.Fatal(err)
		}
	}
	if err := ev.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	_, cl, base := reviewConsole(t, Deps{Events: ev})
	page := reviewGet(t, cl, base+"/agents")
	links := regexp.MustCompile(`<a href="[^"]*(/feed\?agent=[^"]*)">([^<]*)</a>`).FindAllStringSubmatch(page, -1)
	if len(links) != 3 {
		t.Fatalf("want three agents linked on the Agents page, got %q", links)
	}
	own := map[string]string{"alice": "read_inbox", `"alice "`: "send_email", `"alice\u00a0"`: "delete_all"}
	for _, l := range links {
		name := html.UnescapeString(l[2])
		tool, ok := own[name]
		if !ok {
			t.Errorf("unexpected agent %q on the Agents page", name)
			continue
		}
		feed := reviewGet(t, cl, strings.TrimSuffix(base, "/")+html.UnescapeString(l[1]))
		for _, other := range own {
			if shown := strings.Contains(feed, "<td>"+other+"</td>"); shown != (other == tool) {
				t.Errorf("the link of agent %s shows a call of %s: %v, want %v", name, other, shown, other == tool)
			}
		}
	}
}
