package recommend

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/telemetry"
)

// TestSummaryQuotesBlankPaddedAgent: a recommendation's summary is what
// the console's Recommendations page lists and `sluice recommend` prints.
// An agent named "alice " (without auth, what its client calls itself)
// got "let alice  call mail/send_email: …", which a page shows as about
// alice: HTML shows two spaces as one. Its name is quoted in the summary
// now, as the console shows it.
func TestSummaryQuotesBlankPaddedAgent(t *testing.T) {
	for _, agent := range []string{"alice ", "alice\u00a0"} {
		var evs []telemetry.Event
		for i := range 6 {
			evs = append(evs, enforced(now.Add(-time.Duration(i)*time.Hour), agent, "web", "web_search", "deny", "manifest_class_not_allowed", "", "sink:network"))
			evs = append(evs, enforced(now.Add(-time.Duration(i)*time.Hour), agent, "mail", "send_email", "deny", "default_deny", ""))
		}
		recs := only(t, corpus(t, evs), AddTool)
		if len(recs) != 2 {
			t.Fatalf("%q: ADD_TOOL %+v, want two", agent, recs)
		}
		for _, r := range recs {
			if q := "let " + strconv.Quote(agent) + " call "; !strings.HasPrefix(r.Summary, q) {
				t.Errorf("agent %q: summary %q, want its name quoted", agent, r.Summary)
			}
		}
	}
}
