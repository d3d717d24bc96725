package intercept

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"

	"github.com/go-json-experiment/json/jsontext"
)

// countingLister counts its listings and fails them with err.
type countingLister struct {
	n   atomic.Int64
	err error
}

func (l *countingLister) ListTools(context.Context) error { l.n.Add(1); return l.err }

// hashingObserver keeps an inventory, as far as ensureListed can tell.
type hashingObserver struct{}

func (hashingObserver) ObserveTools(string, jsontext.Value) {}
func (hashingObserver) Hash(string) string                  { return "h" }

// TestUnlistedCallListed: a tools/call of a client (session, or agent
// without one) that has not listed its upstream's tools has them listed
// first, once; a client that listed, and an Interceptor whose Observer
// keeps no inventory, are not listed for; a listing that fails denies.
func TestUnlistedCallListed(t *testing.T) {
	ctx := context.Background()
	call := mustDecode(t, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"fetch","arguments":{}}}`)
	l := &countingLister{}
	i := &Interceptor{Decider: &StaticDecider{Default: Allow}, Observer: hashingObserver{}}
	session := CallContext{Upstream: "web", Agent: "a", SessionID: "s1", Lister: l}
	for range 2 {
		if _, ok := i.Check(ctx, call, session); !ok {
			t.Fatal("call refused")
		}
	}
	if n := l.n.Load(); n != 1 {
		t.Errorf("a session's two calls: %d listings, want 1", n)
	}
	listed := CallContext{Upstream: "web", Agent: "a", SessionID: "s2", Lister: l}
	i.ObserveListed(ctx, listed, "tools/list", jsontext.Value(`{"tools":[]}`))
	stateless := CallContext{Upstream: "web", Agent: "b", Lister: l}
	i.ObserveListed(ctx, stateless, "tools/list", jsontext.Value(`{"tools":[]}`))
	i.Check(ctx, call, listed)
	i.Check(ctx, call, stateless)
	if n := l.n.Load(); n != 1 {
		t.Errorf("clients that listed: %d listings, want still 1", n)
	}
	i.Check(ctx, call, CallContext{Upstream: "web", Agent: "c", Lister: l})
	i.Check(ctx, call, CallContext{Upstream: "docs", Agent: "b", Lister: l})
	if n := l.n.Load(); n != 3 {
		t.Errorf("another agent, another upstream: %d listings, want 3", n)
	}

	plain := &Interceptor{Decider: &StaticDecider{Default: Allow}, Observer: observerFunc(func(string, jsontext.Value) {})}
	plain.Check(ctx, call, CallContext{Upstream: "web", Agent: "z", Lister: l})
	if n := l.n.Load(); n != 3 {
		t.Errorf("an Observer that keeps no inventory: %d listings, want still 3", n)
	}

	failing := &countingLister{err: errors.New("upstream down")}
	var got Decision
	i.OnDecision = func(_ *ActionDescriptor, dec Decision) { got = dec }
	reply, ok := i.Check(ctx, call, CallContext{Upstream: "web", Agent: "f", Lister: failing})
	if ok || got.Reason != ReasonToolsNotListed || got.Verdict != Deny {
		t.Errorf("listing failed: forwarded %v, decision %s %s; want a deny %s", ok, got.Verdict, got.Reason, ReasonToolsNotListed)
	}
	if m, err := DecodeMessage(reply); err != nil || m.Kind != KindError {
		t.Errorf("listing failed: reply %s, want a JSON-RPC error", reply)
	}
	i.Check(ctx, call, CallContext{Upstream: "web", Agent: "f", Lister: failing})
	if n := failing.n.Load(); n != 2 {
		t.Errorf("a failed listing is tried again on the next call: %d listings, want 2", n)
	}
}

type observerFunc func(string, jsontext.Value)

func (f observerFunc) ObserveTools(u string, r jsontext.Value) { f(u, r) }

// TestUnlistedCheckAllocs: a call of a client that listed costs a lookup
// and no allocation.
func TestUnlistedCheckAllocs(t *testing.T) {
	ctx := context.Background()
	i := &Interceptor{Observer: hashingObserver{}}
	for _, cc := range []CallContext{
		{Upstream: "web", Agent: "a", SessionID: "s1", Lister: &countingLister{}},
		{Upstream: "web", Agent: "a", Lister: &countingLister{}},
		{Upstream: "web", Principal: &Principal{ID: "p"}, Lister: &countingLister{}},
	} {
		i.ObserveListed(ctx, cc, "tools/list", jsontext.Value(`{"tools":[]}`))
		if n := testing.AllocsPerRun(100, func() {
			if err := i.ensureListed(ctx, cc); err != nil {
				t.Fatal(err)
			}
		}); n != 0 {
			t.Errorf("%+v: %v allocations, want 0", cc, n)
		}
	}
}
