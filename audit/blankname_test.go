package audit

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/telemetry"
)

// TestEventsTextQuotesBlankNames: `sluice events query` quotes a value
// with a space, but a blank Braille pattern (U+2800), which Go calls
// printable and shows as a blank, was printed as it is: the calls of an
// agent named alice+U+2800 printed as agent=alice followed by blanks, as
// the console and `sluice approvals list` no longer show it.
func TestEventsTextQuotesBlankNames(t *testing.T) {
	st, path := openTest(t, Options{Sync: true})
	defer st.Close()
	appendAll(t, st, []telemetry.Event{telemetry.PolicyEnforcement{
		Time: t0, TxnID: "txn-look", Agent: "alice\u2800", Upstream: "mail", Tool: "send_email", Decision: "deny", Reason: "default_deny",
	}.Event()})
	var out bytes.Buffer
	if err := RunEventsCLI(context.Background(), []string{"query", "--db", path}, &out); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), `agent="alice`) {
		t.Errorf("events query: %q; want the agent's name quoted", out.String())
	}
}
