package audit

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/internal/invisible"
	"github.com/sluicehq/sluice/telemetry"
)

// TestAttackEventsInvisibleNames: the text and JSON outputs escaped what
// Go calls unprintable, but a variation selector (U+FE0F) or a combining
// grapheme joiner (U+034F) is "printable" and shows as nothing:
// `sluice events query` printed agent=alice tool=send_email for the calls
// of an agent named "ali\uFE0Fce" to "send\u034F_email", unquoted, as
// `sluice recommend` and `sluice approvals list` no longer do.
func TestAttackEventsInvisibleNames(t *testing.T) {
	st, path := openTest(t, Options{Sync: true})
	defer st.Close()
	appendAll(t, st, []telemetry.Event{telemetry.PolicyEnforcement{
		Time: t0, TxnID: "txn-look", Agent: "ali\ufe0fce", Upstream: "mail", Tool: "send\u034f_email", Decision: "deny", Reason: "default_deny",
	}.Event()})
	for _, args := range [][]string{{"query"}, {"query", "--json"}, {"export"}} {
		var out bytes.Buffer
		if err := RunEventsCLI(context.Background(), append(args, "--db", path), &out); err != nil {
			t.Fatal(err)
		}
		if i := strings.IndexFunc(out.String(), invisible.Is); i >= 0 && out.String()[i] != '\n' {
			t.Errorf("events %v: the output shows a name with an invisible character: %q", args, out.String())
		}
		if !strings.Contains(out.String(), "ali") || strings.Contains(out.String(), "alice") {
			t.Errorf("events %v: %q; want the agent's name spelt out, not alice", args, out.String())
		}
	}
}
