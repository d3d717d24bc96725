package approval

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/sluicehq/sluice/intercept"
)

// TestAttackHeldCallsNameBytesBounded: the bytes a held call keeps were
// counted as its arguments and what else it sends, but it keeps its
// tool's name too, and its agent's, each as long as the client writes
// it (a made-up tool's name is as long as a request, max_body_bytes): an
// approval rule for a whole upstream (or a class) holds any name. With
// tiny arguments, 4 MiB names counted as nothing, and one address's
// 1,000 held calls kept 4 GiB. The names count.
func TestAttackHeldCallsNameBytesBounded(t *testing.T) {
	s := NewStore(Options{MaxLiveBytes: 10 << 20}) // 1 MiB an agent or address
	holdAll := intercept.DeciderFunc(func(context.Context, *intercept.ActionDescriptor) (intercept.Decision, error) {
		return intercept.Decision{Verdict: intercept.RequireApproval, Reason: "upstream_requires_approval"}, nil
	})
	g := &Gate{Next: holdAll, Store: s}
	from := intercept.WithClientAddr(context.Background(), "192.0.2.1")
	held := 0
	for i := range 8 {
		tool := fmt.Sprintf("t%d", i) + strings.Repeat("x", 300<<10)
		agent := fmt.Sprintf("a%d", i) + strings.Repeat("y", 100<<10)
		dec := intercept.Decide(from, g, &intercept.ActionDescriptor{TxnID: intercept.NewTxnID(), ToolName: tool, Upstream: "bank",
			Agent: agent, Parameters: jsontext.Value(`{}`)})
		switch {
		case dec.Verdict == intercept.RequireApproval:
			held++
		case dec.Reason != ReasonTooMany || !strings.Contains(dec.PublicReason, "bytes"):
			t.Fatalf("call %d: %s %s %q", i, dec.Verdict, dec.Reason, dec.PublicReason)
		}
	}
	if held > 3 {
		t.Errorf("%d calls with 400 KiB of names held from one address, more than its 1 MiB", held)
	}
}
