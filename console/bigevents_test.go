package console

import (
	"context"
	"fmt"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/audit"
	"github.com/sluicehq/sluice/telemetry"
)

// An agent chooses how large its events are: a tools/call's name (denied
// and recorded all the same) may be as long as a request body, 4 MiB by
// default, and so may its client name or kept arguments. The Agents page
// read the newest 5,000 events whatever their size: 5,000 calls with
// 4 MiB names had one view of it hold 20 GiB in the gateway. Here 120 calls
// with 1 MiB names were all read; the page now stops at maxPageBytes.
// Names are now recorded bounded (telemetry.Bound), kept arguments are
// not: here they make the events large.
func TestConsoleAgentsPageBoundedByBytes(t *testing.T) {
	ev, err := audit.Open(filepath.Join(t.TempDir(), "events.db"), audit.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer ev.Close()
	ctx := context.Background()
	const calls, nameBytes = 120, 1 << 20
	for i := range calls {
		if err := ev.Append(ctx, telemetry.PolicyEnforcement{Time: time.Now(), TxnID: fmt.Sprint("txn", i), Agent: "mallory", Upstream: "mail",
			Tool: fmt.Sprintf("%04d", i), Decision: "deny", Reason: "default_deny",
			Arguments: telemetry.Arguments{Value: map[string]any{"body": strings.Repeat("x", nameBytes)}}}.Event()); err != nil {
			t.Fatal(err)
		}
	}
	if err := ev.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	_, cl, base := reviewConsole(t, Deps{Events: ev})
	page := reviewGet(t, cl, base+"/agents")
	m := regexp.MustCompile(`From the newest (\d+) events`).FindStringSubmatch(page)
	if m == nil {
		t.Fatalf("no window on the Agents page:\n%s", page)
	}
	if n, _ := strconv.Atoi(m[1]); n*nameBytes > maxPageBytes+2*nameBytes || !strings.Contains(page, "mallory") {
		t.Errorf("the Agents page read %d events of %d MiB each (%d MiB); want at most about %d MiB, mallory shown", n, nameBytes>>20, n*nameBytes>>20, maxPageBytes>>20)
	}
	for _, p := range []string{"/feed", "/feed?reason=default_deny"} {
		if page := reviewGet(t, cl, base+p); !strings.Contains(page, "txn119") {
			t.Errorf("%s does not show the newest call", p)
		}
	}
}
