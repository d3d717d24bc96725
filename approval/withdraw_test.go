package approval

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/sluicehq/sluice/intercept"
)

// TestWithdraw: a pending request whose client cancelled the call is
// withdrawn — in memory, and through another process on the same file or
// Redis: nobody can approve it any more, a Wait on it ends, and the same
// call sent again is held anew. An answered request is not withdrawn.
func TestWithdraw(t *testing.T) {
	t.Run("memory", func(t *testing.T) {
		s := NewStore(Options{})
		testWithdraw(t, s, s)
	})
	eachBackend(t, func(t *testing.T, open func(Options) *Store) {
		testWithdraw(t, open(Options{}), open(Options{}))
	})
}

func testWithdraw(t *testing.T, holder, other *Store) {
	ctx := context.Background()
	g := &Gate{Next: holdPay, Store: holder}
	d := intercept.Decide(ctx, g, call(`{"amount":5}`))
	if d.Verdict != intercept.RequireApproval || d.ApprovalID == "" {
		t.Fatalf("call: got %s %q, want require_approval", d.Verdict, d.ApprovalID)
	}
	id := d.ApprovalID
	waited := make(chan Request, 1)
	go func() {
		wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		r, _ := holder.Wait(wctx, id)
		waited <- r
	}()
	got, err := other.Withdraw(id, "mcp-cancel:bot")
	if err != nil || got.Status != Withdrawn || got.DecidedBy != "mcp-cancel:bot" || got.Arguments != nil {
		t.Fatalf("Withdraw: got %+v, %v, want withdrawn by mcp-cancel:bot without its arguments", got, err)
	}
	if r := <-waited; r.Status != Withdrawn {
		t.Errorf("Wait on the holder: got %s, want %s", r.Status, Withdrawn)
	}
	if _, err := holder.Decide(id, true, "alice"); !errors.Is(err, ErrNotPending) {
		t.Errorf("approving the withdrawn request: got %v, want ErrNotPending", err)
	}
	if _, err := other.Withdraw(id, "mcp-cancel:bot"); !errors.Is(err, ErrNotPending) {
		t.Errorf("withdrawing it again: got %v, want ErrNotPending", err)
	}
	d = intercept.Decide(ctx, g, call(`{"amount":5}`))
	if d.Verdict != intercept.RequireApproval || d.ApprovalID == "" || d.ApprovalID == id {
		t.Fatalf("the call sent again: got %s %q, want a new hold", d.Verdict, d.ApprovalID)
	}
	if _, err := holder.Decide(d.ApprovalID, true, "alice"); err != nil {
		t.Fatal(err)
	}
	if _, err := other.Withdraw(d.ApprovalID, "mcp-cancel:bot"); !errors.Is(err, ErrNotPending) {
		t.Errorf("withdrawing an approved request: got %v, want ErrNotPending", err)
	}
	if got, _ := holder.Get(d.ApprovalID); got.Status != Approved {
		t.Errorf("approved request after a withdrawal: got %s, want approved", got.Status)
	}
}

// TestAbandon: a request whose held call the gateway refused (its
// credential no longer held) ends even once approved, in memory and
// through another process on the same file or Redis: its approval
// allows nothing, and the same call sent again is held anew. A used
// request stays as it is.
func TestAbandon(t *testing.T) {
	t.Run("memory", func(t *testing.T) {
		s := NewStore(Options{})
		testAbandon(t, s, s)
	})
	eachBackend(t, func(t *testing.T, open func(Options) *Store) {
		testAbandon(t, open(Options{}), open(Options{}))
	})
}

func testAbandon(t *testing.T, holder, other *Store) {
	ctx := context.Background()
	g := &Gate{Next: holdPay, Store: holder}
	id := intercept.Decide(ctx, g, call(`{"amount":7}`)).ApprovalID
	if _, err := holder.Decide(id, true, "alice"); err != nil {
		t.Fatal(err)
	}
	got, err := other.Abandon(id, "credential-lapsed:bot")
	if err != nil || got.Status != Withdrawn || got.DecidedBy != "credential-lapsed:bot" {
		t.Fatalf("Abandon of an approved request: got %+v, %v, want withdrawn by credential-lapsed:bot", got, err)
	}
	d := intercept.Decide(ctx, g, call(`{"amount":7}`))
	if d.Verdict != intercept.RequireApproval || d.ApprovalID == "" || d.ApprovalID == id {
		t.Fatalf("the call sent again: got %s %q, want a new hold", d.Verdict, d.ApprovalID)
	}
	if _, err := other.Abandon(id, "credential-lapsed:bot"); !errors.Is(err, ErrNotPending) {
		t.Errorf("abandoning it again: got %v, want ErrNotPending", err)
	}
}
