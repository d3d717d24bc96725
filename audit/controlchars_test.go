package audit

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/telemetry"
)

// A tool name is the agent's to choose. In `sluice events query` it must
// not reach the operator's terminal as control characters: ESC sequences
// and a carriage return can erase or rewrite the line of a denied call.
func TestEventsTextNoControlCharacters(t *testing.T) {
	st, path := openTest(t, Options{Sync: true})
	defer st.Close()
	// Clears this line and the one above, then writes a benign-looking
	// remainder: the denial is gone from the screen.
	evil := "x\x1b[2K\x1b[1A\x1b[2K\rlooks_fine"
	appendAll(t, st, []telemetry.Event{telemetry.PolicyEnforcement{
		Time: t0, TxnID: "txn-evil", Agent: "mallory", Upstream: "fs", Tool: evil, Decision: "deny", Reason: "default_deny",
	}.Event()})
	var out bytes.Buffer
	if err := RunEventsCLI(context.Background(), []string{"query", "--db", path}, &out); err != nil {
		t.Fatal(err)
	}
	s := strings.TrimSuffix(out.String(), "\n")
	for _, r := range s {
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) {
			t.Fatalf("the text output carries control character %U from the tool name: %q", r, s)
		}
	}
}
