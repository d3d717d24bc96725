package audit_test

import (
	"context"
	"os"
	"path/filepath"
	"time"

	"github.com/sluicehq/sluice/audit"
	"github.com/sluicehq/sluice/telemetry"
)

func Example() {
	dir, _ := os.MkdirTemp("", "sluice-audit")
	defer os.RemoveAll(dir)
	ctx := context.Background()

	st, err := audit.Open(filepath.Join(dir, audit.FileName), audit.Options{Sync: true})
	if err != nil {
		panic(err)
	}
	at := time.Date(2025, 5, 1, 12, 0, 0, 0, time.UTC)
	for _, e := range []telemetry.Event{
		telemetry.PolicyEnforcement{Time: at, TxnID: "t1", Agent: "claude-code", Tool: "delete_repo", Decision: "deny", Reason: "tool_denied"}.Event(),
		telemetry.PolicyEnforcement{Time: at, TxnID: "t2", Agent: "claude-code", Tool: "search", Decision: "allow", Reason: "tool_allowed"}.Event(),
	} {
		if err := st.Append(ctx, e); err != nil { // returns once committed and fsynced
			panic(err)
		}
	}
	_ = st.Close()

	// The CLI does this: sluice events export --db DIR/events.db --decision deny
	err = audit.RunEventsCLI(ctx, []string{"query", "--db", filepath.Join(dir, audit.FileName), "--decision", "deny"}, os.Stdout)
	if err != nil {
		panic(err)
	}
	// Output:
	// 2025-05-01T12:00:00.000Z policy_enforced decision=deny reason=tool_denied agent=claude-code tool=delete_repo txn=t1
}
