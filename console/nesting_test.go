package console

import (
	"context"
	"encoding/json"
	"html"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/approval"
	"github.com/sluicehq/sluice/audit"
	"github.com/sluicehq/sluice/telemetry"
)

// TestConsoleNestedArgumentsBounded: the console lays a call's arguments
// out one member a line, each indented by its depth, and an agent chooses
// the depth. Arguments of 10 KB nested 5,000 deep ({"a":[[[…]]]}) were
// laid out as 50 MB: each of 10,000 lines indented by up to 10,000
// spaces. One held call made the Approvals page 50 MB (a 20 KB call
// 200 MB, a hundred held calls of an agent 20 GB, built in the gateway's
// memory to be sent to the operator's browser), and so did one recorded
// call's page. Arguments that would lay out much larger than they are
// are shown compact now, wrapped as the rest.
func TestConsoleNestedArgumentsBounded(t *testing.T) {
	// Deeper than telemetry.MaxKeptDepth, recorded arguments keep their
	// hash only; this is as deep as they are still recorded.
	const depth = telemetry.MaxKeptDepth - 10
	nested := `{"to":"boss@corp.com","a":` + strings.Repeat("[", depth) + strings.Repeat("]", depth) + `}`
	st := approval.NewStore(approval.Options{})
	holdCall(t, st, "agent-a", "send_email", nested)
	ev, err := audit.Open(filepath.Join(t.TempDir(), "events.db"), audit.Options{Sync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer ev.Close()
	if err := ev.Append(context.Background(), telemetry.PolicyEnforcement{Time: time.Now(), TxnID: "txn1", Agent: "agent-a", Upstream: "mail",
		Tool: "send_email", Decision: "deny", Reason: "rule", Arguments: telemetry.Redactor{KeepArguments: true}.Arguments([]byte(nested))}.Event()); err != nil {
		t.Fatal(err)
	}
	_, cl, base := reviewConsole(t, Deps{Approvals: st, Events: ev, KeepArguments: true})
	for _, p := range []string{"/approvals", "/calls/txn1"} {
		page := reviewGet(t, cl, base+p)
		if len(page) > 64<<10 {
			t.Errorf("%s: %d bytes for a call of %d bytes of arguments, want it shown in about as many", p, len(page), len(nested))
		}
		m := preBlock.FindStringSubmatch(page)
		if m == nil {
			t.Errorf("%s: no arguments shown", p)
			continue
		}
		shown := html.UnescapeString(m[1])
		if !json.Valid([]byte(shown)) || !strings.Contains(shown, `"to":`) || strings.Count(shown, "[") != depth {
			t.Errorf("%s: the arguments shown are not the whole call (%d bytes, %d brackets):\n%.300s", p, len(shown), strings.Count(shown, "["), shown)
		}
	}
}
