package approval

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/sluicehq/sluice/intercept"
)

// TestUpstreamAskedGoesOn: once the upstream answered an approved call
// with input_required and a state (UpstreamAsked), the one retry of the
// same agent carrying that state, with nothing but its answers added,
// goes on under the approval (approval_continued), without using it
// again — through another process on the same file or Redis too. Any
// other retry is held as a new call: a state the approval was not told
// of, one already gone on with, another agent, other arguments, another
// member beside the answers, an expired approval.
func TestUpstreamAskedGoesOn(t *testing.T) {
	t.Run("memory", func(t *testing.T) {
		s := NewStore(Options{})
		testUpstreamAsked(t, s, s)
	})
	eachBackend(t, func(t *testing.T, open func(Options) *Store) {
		testUpstreamAsked(t, open(Options{}), open(Options{}))
	})
}

// retryOf is call(args) as the retry answering the upstream's question,
// with state, extra holding the answers.
func retryOf(args, state, extra string) *intercept.ActionDescriptor {
	d := call(args)
	d.UpstreamState, d.CallExtra = state, jsontext.Value(extra)
	return d
}

const answers = `{"params.inputResponses":{"confirm":{"action":"accept"}}}`

// usedApproval holds pay {"amount":5} on g, approves it and forwards the
// call sent again: the approval is used. It returns its id.
func usedApproval(t *testing.T, g *Gate) string {
	t.Helper()
	ctx := context.Background()
	d := intercept.Decide(ctx, g, call(`{"amount":5}`))
	if _, err := g.Store.Decide(d.ApprovalID, true, "alice"); err != nil {
		t.Fatal(err)
	}
	c := call(`{"amount":5}`)
	if d = intercept.Decide(ctx, g, c); d.Verdict != intercept.Allow || g.Forwarded(ctx, c, d) != nil {
		t.Fatalf("approved call: got %s", d.Verdict)
	}
	return d.ApprovalID
}

func testUpstreamAsked(t *testing.T, holder, other *Store) {
	ctx := context.Background()
	g, og := &Gate{Next: holdPay, Store: holder}, &Gate{Next: holdPay, Store: other}
	id := usedApproval(t, g)
	// Before the upstream asked, a state goes on with nothing.
	if d := intercept.Decide(ctx, og, retryOf(`{"amount":5}`, "s1", answers)); d.Verdict != intercept.RequireApproval {
		t.Fatalf("a retry the approval was not told of: got %s, want held", d.Verdict)
	}
	g.UpstreamAsked(ctx, id, "s1")
	for _, tc := range []struct {
		name string
		d    *intercept.ActionDescriptor
	}{
		{"another state", retryOf(`{"amount":5}`, "s2", answers)},
		{"other arguments", retryOf(`{"amount":500}`, "s1", answers)},
		{"a member beside the answers", retryOf(`{"amount":5}`, "s1", `{"params.inputResponses":{},"params.priority":"now"}`)},
		{"another agent", func() *intercept.ActionDescriptor {
			d := retryOf(`{"amount":5}`, "s1", answers)
			d.Agent = "a2"
			return d
		}()},
	} {
		if d := intercept.Decide(ctx, og, tc.d); d.Verdict != intercept.RequireApproval {
			t.Errorf("%s: got %s %s, want held", tc.name, d.Verdict, d.Reason)
		}
	}
	r := retryOf(`{"amount":5}`, "s1", answers)
	d := intercept.Decide(ctx, og, r)
	if d.Verdict != intercept.Allow || d.Reason != ReasonContinued || d.ApprovalID != id {
		t.Fatalf("the retry carrying the state: got %s %s %s, want allowed under %s", d.Verdict, d.Reason, d.ApprovalID, id)
	}
	if err := og.Forwarded(ctx, r, d); err != nil {
		t.Fatalf("forwarding the continuation: %v", err)
	}
	if d := intercept.Decide(ctx, og, retryOf(`{"amount":5}`, "s1", answers)); d.Verdict != intercept.RequireApproval {
		t.Errorf("the same retry again: got %s %s, want held (a state goes on once)", d.Verdict, d.Reason)
	}
	// The upstream asks again on the continuation: its retry goes on too.
	g.UpstreamAsked(ctx, id, "s2")
	if d := intercept.Decide(ctx, og, retryOf(`{"amount":5}`, "s2", answers)); d.Verdict != intercept.Allow {
		t.Errorf("the second round's retry: got %s %s, want allowed", d.Verdict, d.Reason)
	}
	if got, _ := other.Get(id); got.Status != Used || len(got.Asked) != 0 {
		t.Errorf("request after: got %s with %d states, want used with none", got.Status, len(got.Asked))
	}
}

// TestUpstreamAskedOnce: two copies of the retry at once: one goes on.
func TestUpstreamAskedOnce(t *testing.T) {
	ctx := context.Background()
	s := NewStore(Options{})
	g := &Gate{Next: holdPay, Store: s}
	g.UpstreamAsked(ctx, usedApproval(t, g), "s1")
	var mu sync.Mutex
	allowed := 0
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if d := intercept.Decide(ctx, g, retryOf(`{"amount":5}`, "s1", answers)); d.Verdict == intercept.Allow {
				mu.Lock()
				allowed++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if allowed != 1 {
		t.Errorf("%d of 8 copies went on, want 1", allowed)
	}
}

// TestUpstreamAskedExpired: an approval past its timeout goes on with
// nothing.
func TestUpstreamAskedExpired(t *testing.T) {
	ctx := context.Background()
	c := &clock{t: time.Unix(1000, 0)}
	s := NewStore(Options{Timeout: time.Minute, Now: c.now})
	g := &Gate{Next: holdPay, Store: s}
	g.UpstreamAsked(ctx, usedApproval(t, g), "s1")
	c.t = c.t.Add(2 * time.Minute)
	if d := intercept.Decide(ctx, g, retryOf(`{"amount":5}`, "s1", answers)); d.Verdict != intercept.RequireApproval {
		t.Errorf("after the approval expired: got %s %s, want held", d.Verdict, d.Reason)
	}
}

// TestUpstreamAskedNotUsedAgain: an approval going on with its upstream's
// round trip does not change its status: OnChange (the audit's approval
// events, the log) hears of its use once. Before, every state the
// upstream issued and every retry that went on was told as the approval
// used again.
func TestUpstreamAskedNotUsedAgain(t *testing.T) {
	ctx := context.Background()
	var used []string
	s := NewStore(Options{OnChange: func(r Request) {
		if r.Status == Used {
			used = append(used, r.ID)
		}
	}})
	g := &Gate{Next: holdPay, Store: s}
	id := usedApproval(t, g)
	for _, st := range []string{"s1", "s2"} {
		g.UpstreamAsked(ctx, id, st)
		if got := intercept.Decide(ctx, g, retryOf(`{"amount":5}`, st, answers)); got.Reason != ReasonContinued {
			t.Fatalf("retry with %s: got %s %s, want %s", st, got.Verdict, got.Reason, ReasonContinued)
		}
	}
	if len(used) != 1 {
		t.Errorf("OnChange heard of the approval used %d times, want 1", len(used))
	}
}

// TestApprovalBindsUpstreamState: an approval of a call that carries its
// upstream's requestState allows that call with that state only. The
// upstream acts on the state, not on what the operator saw: with another
// state it issued this agent for the same call (an earlier round, or
// another run of the same call), the answers approved would answer
// another question. So the call with another state, or with none, and
// the call without one approved then sent with one, are held anew. The
// approved call's own round trip goes on as before: the state the
// upstream answers it with next (UpstreamAsked) goes on under it.
func TestApprovalBindsUpstreamState(t *testing.T) {
	t.Run("memory", func(t *testing.T) {
		s := NewStore(Options{})
		testApprovalBindsState(t, s, s)
	})
	eachBackend(t, func(t *testing.T, open func(Options) *Store) {
		testApprovalBindsState(t, open(Options{}), open(Options{}))
	})
}

func testApprovalBindsState(t *testing.T, holder, other *Store) {
	ctx := context.Background()
	g, og := &Gate{Next: holdPay, Store: holder}, &Gate{Next: holdPay, Store: other}
	d := intercept.Decide(ctx, g, retryOf(`{"amount":5}`, "s1", answers))
	if d.Verdict != intercept.RequireApproval || d.ApprovalID == "" {
		t.Fatalf("the retry carrying s1: got %s, want held", d.Verdict)
	}
	id := d.ApprovalID
	if _, err := holder.Decide(id, true, "alice"); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		d    *intercept.ActionDescriptor
	}{
		{"another state", retryOf(`{"amount":5}`, "s2", answers)},
		{"no state", retryOf(`{"amount":5}`, "", answers)},
	} {
		if got := intercept.Decide(ctx, og, tc.d); got.Verdict != intercept.RequireApproval || got.ApprovalID == id {
			t.Errorf("%s: got %s %s under %q, want held anew", tc.name, got.Verdict, got.Reason, got.ApprovalID)
		}
	}
	r := retryOf(`{"amount":5}`, "s1", answers)
	d = intercept.Decide(ctx, og, r)
	if d.Verdict != intercept.Allow || d.Reason != ReasonGranted || d.ApprovalID != id {
		t.Fatalf("the approved retry: got %s %s %s, want allowed under %s", d.Verdict, d.Reason, d.ApprovalID, id)
	}
	if err := og.Forwarded(ctx, r, d); err != nil {
		t.Fatal(err)
	}
	// Its upstream asks again: the next retry goes on under it.
	g.UpstreamAsked(ctx, id, "s3")
	if d := intercept.Decide(ctx, og, retryOf(`{"amount":5}`, "s3", `{"params.inputResponses":{"confirm":{"action":"decline"}}}`)); d.Verdict != intercept.Allow || d.Reason != ReasonContinued {
		t.Errorf("the next round's retry: got %s %s, want %s", d.Verdict, d.Reason, ReasonContinued)
	}

	// A call approved without a state is not sent with one.
	plain := intercept.Decide(ctx, g, call(`{"amount":7}`))
	if _, err := holder.Decide(plain.ApprovalID, true, "alice"); err != nil {
		t.Fatal(err)
	}
	withState := call(`{"amount":7}`)
	withState.UpstreamState = "s4"
	if got := intercept.Decide(ctx, og, withState); got.Verdict != intercept.RequireApproval || got.ApprovalID == plain.ApprovalID {
		t.Errorf("the call approved without a state, sent with one: got %s %s under %q (%s), want held anew", got.Verdict, got.Reason, got.ApprovalID, got.PublicReason)
	}
	if got := intercept.Decide(ctx, og, call(`{"amount":7}`)); got.Verdict != intercept.Allow || got.ApprovalID != plain.ApprovalID {
		t.Errorf("the call approved without a state: got %s %s, want allowed", got.Verdict, got.Reason)
	}
}
