package console

import (
	"context"
	"html"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/approval"
	"github.com/sluicehq/sluice/intercept"
	"github.com/sluicehq/sluice/internal/redistest"
)

// TestApprovalsPageStoreDown: with the approvals in Redis and Redis down,
// the Approvals page showed this replica's last known state as if it were
// current; it now says the store did not answer, above that state.
func TestApprovalsPageStoreDown(t *testing.T) {
	srv := redistest.Start(t)
	opt, err := redis.ParseURL(srv.URL())
	if err != nil {
		t.Fatal(err)
	}
	opt.MaxRetries, opt.DialTimeout = -1, 200*time.Millisecond
	st, err := approval.OpenRedisStore(context.Background(), redis.NewClient(opt), "test:", approval.Options{Timeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	hold := &approval.Gate{Store: st, Next: &intercept.StaticDecider{Default: intercept.Allow, Approval: []string{"pay"}}}
	if d := intercept.Decide(context.Background(), hold, &intercept.ActionDescriptor{TxnID: intercept.NewTxnID(), ToolName: "pay", Upstream: "bank", Agent: "a1"}); d.ApprovalID == "" {
		t.Fatalf("call not held: %+v", d)
	}
	_, cl, base := reviewConsole(t, Deps{Approvals: st})
	if page := reviewGet(t, cl, base+"/approvals"); strings.Contains(page, "did not answer") || !strings.Contains(page, "bank / pay") {
		t.Fatalf("with the store up: want the held call and no warning, got\n%s", page)
	}
	srv.Stop()
	page := html.UnescapeString(reviewGet(t, cl, base+"/approvals"))
	if !strings.Contains(page, "the approvals store did not answer") || !strings.Contains(page, "bank / pay") {
		t.Errorf("with the store down: want the warning above the last known state, got\n%s", page)
	}
}
