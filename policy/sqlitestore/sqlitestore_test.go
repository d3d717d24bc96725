package sqlitestore

import (
	"context"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/sluicehq/sluice/intercept"
	"github.com/sluicehq/sluice/policy"
	"github.com/sluicehq/sluice/policy/storetest"
)

func TestConformance(t *testing.T) {
	s, err := Open(filepath.Join(t.TempDir(), FileName), 100*365*24*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	storetest.Run(t, s)
}

// TestShared: two stores on one file (two processes' worth) see each
// other's memories, writing at once; a memory older than the TTL is gone.
func TestShared(t *testing.T) {
	path := filepath.Join(t.TempDir(), FileName)
	a, err := Open(path, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := Open(path, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	ctx := context.Background()
	now := time.Now()
	var wg sync.WaitGroup
	for i := range 50 {
		wg.Go(func() {
			s := a
			if i%2 == 1 {
				s = b
			}
			k := policy.Key{Scope: policy.ScopeAgent, Agent: string(rune('a' + i%26))}
			if err := s.Remember(ctx, k, []string{"source:sensitive"}, now); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	for i := range 26 {
		k := policy.Key{Scope: policy.ScopeAgent, Agent: string(rune('a' + i))}
		for _, s := range []*Store{a, b} {
			if seen, err := s.Seen(ctx, k, []string{"source:sensitive"}, now.Add(-time.Minute)); err != nil || !seen {
				t.Fatalf("agent %s: seen %v, %v; want what the other store wrote", k.Agent, seen, err)
			}
		}
	}
	old := policy.Key{Scope: policy.ScopeAgent, Agent: "old"}
	if err := a.Remember(ctx, old, []string{"source:sensitive"}, now.Add(-2*time.Hour)); err != nil {
		t.Fatal(err)
	}
	if seen, _ := b.Seen(ctx, old, []string{"source:sensitive"}, time.Time{}); seen {
		t.Error("a memory older than the TTL was seen")
	}
	if a.Retention() != time.Hour {
		t.Errorf("Retention: %v", a.Retention())
	}
}

// TestUnwritableFailsClosed: a store that cannot be written or read (the
// file gone read-only, the database closed) answers with an error, which
// the policy turns into a policy_error deny; it never reports "not seen".
func TestUnwritableFailsClosed(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(filepath.Join(dir, FileName), time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	k := policy.Key{Scope: policy.ScopeAgent, Agent: "a"}
	s.Close()
	if err := s.Remember(context.Background(), k, []string{"source:sensitive"}, time.Now()); err == nil {
		t.Error("Remember on a closed store: no error")
	}
	if seen, err := s.Seen(context.Background(), k, []string{"source:sensitive"}, time.Time{}); err == nil {
		t.Errorf("Seen on a closed store: %v, no error", seen)
	}
	p, err := policy.Compile([]byte("default: allow\ntool_classes: {read: [source:sensitive], post: [sink:network]}\nroute_rules:\n  - {id: r, scope: agent, after: {match_any_class: [source:sensitive]}, deny: {match_any_class: [sink:network]}}\n"),
		"p.yaml", policy.Options{Store: s})
	if err != nil {
		t.Fatal(err)
	}
	d := &intercept.ActionDescriptor{TxnID: "t", ToolName: "post", Agent: "a", Parameters: jsontext.Value(`{}`)}
	if dec := intercept.Decide(context.Background(), p, d); dec.Verdict != intercept.Deny {
		t.Errorf("a sink decided with a store that cannot answer: %s/%s, want a deny", dec.Verdict, dec.Reason)
	}
}
