package policy

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/intercept"
)

// forward decides d and, if it is allowed, tells the policy it was
// forwarded, as the interceptor does.
func forward(t *testing.T, p *Policy, d *intercept.ActionDescriptor) intercept.Decision {
	t.Helper()
	ctx := context.Background()
	dec := intercept.Decide(ctx, p, d)
	if dec.Verdict == intercept.Allow {
		if err := p.Forwarded(ctx, d, dec); err != nil {
			t.Fatalf("Forwarded(%s): %v", d.ToolName, err)
		}
	}
	return dec
}

// An agent cannot push its own sensitive read out of route memory by
// calling many tools no route rule cares about (issue 9, item 4: 1,025 junk
// tool names used to evict the oldest label).
func TestJunkToolsDoNotEvictSources(t *testing.T) {
	p, err := Compile([]byte(routePolicy), "p.yaml", Options{Store: NewMemoryStore(MemoryOptions{})})
	if err != nil {
		t.Fatal(err)
	}
	if dec := forward(t, p, call("read_document")); dec.Verdict != intercept.Allow {
		t.Fatalf("source: got %s, want allow", dec.Verdict)
	}
	for i := range 2000 {
		forward(t, p, call(fmt.Sprintf("junk_%d", i)))
	}
	if dec := forward(t, p, call("web_search")); dec.Verdict != intercept.Deny || dec.Reason != ReasonRouteDeny {
		t.Errorf("sink after the source and 2,000 junk tools: got %s/%s, want deny/%s", dec.Verdict, dec.Reason, ReasonRouteDeny)
	}
}

// A memory dropped to stay within MaxKeys is not a clean one: the sinks
// of its agent or session are denied with route_memory_evicted for as long
// as a route rule's window could have reached a forgotten source.
func TestEvictedMemoryIsTainted(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	policies := map[string]string{
		"no window": routePolicy,
		"window 1h": routePolicy + "    window: 1h\n",
	}
	for name, src := range policies {
		t.Run(name, func(t *testing.T) {
			now = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
			s := NewMemoryStore(MemoryOptions{MaxKeys: 4})
			p, err := Compile([]byte(src), "p.yaml", Options{Store: s, Now: clock})
			if err != nil {
				t.Fatal(err)
			}
			alice := call("read_document")
			alice.Agent, alice.SessionID = "alice", "s1"
			forward(t, p, alice)
			// Other sessions' sources push alice's session and agent
			// memories out.
			for i := range 4 {
				d := call("read_document")
				d.Agent, d.SessionID = "mallory", fmt.Sprint("flood-", i)
				now = now.Add(time.Second)
				forward(t, p, d)
			}
			if s.Evictions() == 0 {
				t.Fatal("no memory was evicted; the test needs one")
			}
			sink := call("web_search")
			sink.Agent, sink.SessionID = "alice", "s1"
			dec := forward(t, p, sink)
			if dec.Verdict != intercept.Deny || dec.Reason != ReasonRouteEvicted || dec.Evidence.MatchedRouteRuleID != "no-exfil" {
				t.Errorf("sink after its memory was evicted: got %s/%s (route rule %q), want deny/%s by no-exfil", dec.Verdict, dec.Reason, dec.Evidence.MatchedRouteRuleID, ReasonRouteEvicted)
			}
			// A session that never had a memory is clean.
			fresh := call("web_search")
			fresh.Agent, fresh.SessionID = "bob", "s9"
			if dec := forward(t, p, fresh); dec.Verdict != intercept.Allow {
				t.Errorf("sink of a session that never read a source: got %s/%s, want allow", dec.Verdict, dec.Reason)
			}
			if name == "window 1h" {
				now = now.Add(2 * time.Hour)
				if dec := forward(t, p, sink); dec.Verdict != intercept.Allow {
					t.Errorf("sink once the window passed the forgotten source: got %s/%s, want allow", dec.Verdict, dec.Reason)
				}
			}
		})
	}
}

func TestMemoryStoreEviction(t *testing.T) {
	ctx := context.Background()
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	k := func(a string) Key { return Key{Scope: ScopeAgent, Agent: a} }
	src := []string{"source:sensitive"}

	t.Run("labels are never evicted one by one", func(t *testing.T) {
		s := NewMemoryStore(MemoryOptions{MaxLabelsPerKey: 4})
		_ = s.Remember(ctx, k("a"), src, t0)
		_ = s.Remember(ctx, k("a"), []string{"b", "c", "d"}, t0.Add(time.Second))
		if seen, err := s.Seen(ctx, k("a"), src, time.Time{}); !seen || err != nil {
			t.Errorf("a full memory: got %v, %v; want seen", seen, err)
		}
		// One more label than the bound drops the memory whole.
		_ = s.Remember(ctx, k("a"), []string{"e"}, t0.Add(2*time.Second))
		if _, err := s.Seen(ctx, k("a"), src, time.Time{}); !errors.Is(err, ErrEvicted) {
			t.Errorf("a memory past its label bound: got %v, want ErrEvicted", err)
		}
		if seen, err := s.Seen(ctx, k("a"), []string{"e"}, time.Time{}); !seen || err != nil {
			t.Errorf("the label written after the drop: got %v, %v; want seen", seen, err)
		}
		if got := s.Evictions(); got != 1 {
			t.Errorf("got %d evictions, want 1", got)
		}
	})

	t.Run("an evicted memory is tainted until since passes its last write", func(t *testing.T) {
		s := NewMemoryStore(MemoryOptions{MaxKeys: 1})
		_ = s.Remember(ctx, k("a"), src, t0)
		_ = s.Remember(ctx, k("b"), src, t0.Add(time.Minute)) // evicts a
		if _, err := s.Seen(ctx, k("a"), src, time.Time{}); !errors.Is(err, ErrEvicted) {
			t.Errorf("evicted, no window: got %v, want ErrEvicted", err)
		}
		if _, err := s.Seen(ctx, k("a"), src, t0); !errors.Is(err, ErrEvicted) {
			t.Errorf("evicted, since its last write: got %v, want ErrEvicted", err)
		}
		if seen, err := s.Seen(ctx, k("a"), src, t0.Add(time.Nanosecond)); seen || err != nil {
			t.Errorf("evicted, since after its last write: got %v, %v; want not seen", seen, err)
		}
		if seen, err := s.Seen(ctx, k("never"), src, time.Time{}); seen || err != nil {
			t.Errorf("never written: got %v, %v; want not seen", seen, err)
		}
		// Written again, a remembers the taint of what it forgot.
		_ = s.Remember(ctx, k("a"), []string{"x"}, t0.Add(2*time.Minute))
		if _, err := s.Seen(ctx, k("a"), src, time.Time{}); !errors.Is(err, ErrEvicted) {
			t.Errorf("evicted then written again: got %v, want ErrEvicted", err)
		}
		if seen, err := s.Seen(ctx, k("a"), []string{"x"}, time.Time{}); !seen || err != nil {
			t.Errorf("evicted then written again, the new label: got %v, %v; want seen", seen, err)
		}
	})

	t.Run("past the bound on evicted memories, every unknown key is tainted up to the horizon", func(t *testing.T) {
		s := NewMemoryStore(MemoryOptions{MaxKeys: 1, MaxEvicted: 1})
		_ = s.Remember(ctx, k("a"), src, t0)
		_ = s.Remember(ctx, k("b"), src, t0.Add(time.Minute)) // evicts a
		_ = s.Remember(ctx, k("c"), src, t0.Add(time.Hour))   // evicts b; a's record of eviction goes
		for _, who := range []string{"a", "never"} {
			if _, err := s.Seen(ctx, k(who), src, time.Time{}); !errors.Is(err, ErrEvicted) {
				t.Errorf("%s, no window: got %v, want ErrEvicted", who, err)
			}
			if seen, err := s.Seen(ctx, k(who), src, t0.Add(time.Second)); seen || err != nil {
				t.Errorf("%s, since after the horizon: got %v, %v; want not seen", who, seen, err)
			}
		}
		if _, err := s.Seen(ctx, k("b"), src, t0.Add(time.Second)); !errors.Is(err, ErrEvicted) {
			t.Errorf("b, since before its last write: got %v, want ErrEvicted", err)
		}
	})
}

// retainingStore forgets memories a fixed time after their last write,
// as Redis does with its TTL.
type retainingStore struct {
	*MemoryStore
	ttl time.Duration
}

func (s retainingStore) Retention() time.Duration { return s.ttl }

// A store that expires memories (Redis's TTL) is only safe for windows no
// longer than its retention: a source older than the TTL but inside the
// window would be forgotten. Compile rejects such a window, naming it.
func TestWindowLongerThanRetention(t *testing.T) {
	s := retainingStore{NewMemoryStore(MemoryOptions{}), 24 * time.Hour}
	for _, tt := range []struct {
		window string
		ok     bool
	}{{"", true}, {"24h", true}, {"1d", true}, {"25h", false}, {"7d", false}} {
		src := routePolicy
		if tt.window != "" {
			src += "    window: " + tt.window + "\n"
		}
		_, err := Compile([]byte(src), "p.yaml", Options{Store: s})
		if tt.ok && err != nil {
			t.Errorf("window %q with a 24h retention: got %v, want no error", tt.window, err)
		}
		if !tt.ok && (err == nil || !strings.Contains(err.Error(), "p.yaml:12:") || !strings.Contains(err.Error(), "route_memory.ttl")) {
			t.Errorf("window %q with a 24h retention: got %v, want an error at p.yaml:12 naming route_memory.ttl", tt.window, err)
		}
	}
}

// The memories of ended sessions are dropped, not evicted: however many
// sessions come and go, a live session and the agents' memories are
// never pushed out by them, and no memory is treated as tainted.
func TestForgetSession(t *testing.T) {
	ctx := context.Background()
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	src := []string{"source:sensitive"}
	s := NewMemoryStore(MemoryOptions{MaxKeys: 8, MaxEvicted: 8})
	live := Key{Scope: ScopeSession, Agent: "a", Session: "live"}
	agent := Key{Scope: ScopeAgent, Agent: "a"}
	_ = s.Remember(ctx, live, src, t0)
	_ = s.Remember(ctx, agent, src, t0)
	for i := range 1000 {
		id := fmt.Sprintf("s%d", i)
		_ = s.Remember(ctx, Key{Scope: ScopeSession, Agent: "a", Session: id}, src, t0.Add(time.Duration(i)*time.Second))
		s.ForgetSession(id)
	}
	if got := s.Evictions(); got != 0 {
		t.Errorf("got %d evictions, want none: ended sessions are forgotten, not evicted", got)
	}
	for _, k := range []Key{live, agent} {
		if seen, err := s.Seen(ctx, k, src, time.Time{}); !seen || err != nil {
			t.Errorf("%s: got %v, %v; want seen", k, seen, err)
		}
	}
	fresh := Key{Scope: ScopeSession, Agent: "a", Session: "new"}
	if seen, err := s.Seen(ctx, fresh, src, time.Time{}); seen || err != nil {
		t.Errorf("a new session: got %v, %v; want clean (not seen, not evicted)", seen, err)
	}
	if got := s.Len(); got != 2 {
		t.Errorf("got %d memories, want 2 (the live session and the agent)", got)
	}
	s.ForgetSession("") // requests outside sessions: nothing to forget
}
