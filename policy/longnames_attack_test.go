package policy

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluicehq/sluice/intercept"
)

// keyRecorder is a MemoryStore that records the keys it is given.
type keyRecorder struct {
	*MemoryStore
	mu   sync.Mutex
	keys []Key
}

func (r *keyRecorder) Remember(ctx context.Context, k Key, labels []string, at time.Time) error {
	r.mu.Lock()
	r.keys = append(r.keys, k)
	r.mu.Unlock()
	return r.MemoryStore.Remember(ctx, k, labels, at)
}

// TestAttackLongNamesBoundMemoryKeys: every store is given keys of
// bounded size whatever names the client gives (in process, each of the
// 100,000 memories kept its agent's name and session id whole: 4 MiB
// apiece), two names are two memories, and a long session's memory goes
// when the session ends. See TestAttackLongNamesBoundRedisKeys.
func TestAttackLongNamesBoundMemoryKeys(t *testing.T) {
	store := &keyRecorder{MemoryStore: NewMemoryStore(MemoryOptions{})}
	p, err := Compile([]byte(`
default: allow
tool_classes:
  read_secret: [source:sensitive]
  post: [sink:network]
route_rules:
  - {id: no-exfil-session, after: {match_any_class: [source:sensitive]}, deny: {match_any_class: [sink:network]}, scope: session}
`), "long.yaml", Options{Store: store})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	long := "mallory" + strings.Repeat("x", 1<<20)
	longSession := "s-" + strings.Repeat("y", 1<<20)
	do := func(tool, agent, session string) intercept.Decision {
		d := &intercept.ActionDescriptor{ToolName: tool, Upstream: "up", Agent: agent, SessionID: session, Parameters: []byte("{}")}
		dec, _ := p.Decide(ctx, d)
		if dec.Verdict == intercept.Allow {
			if err := p.Forwarded(ctx, d, dec); err != nil {
				t.Fatal(err)
			}
		}
		return dec
	}
	for _, c := range [][2]string{{long, "s1"}, {"alice", longSession}, {long, longSession}} {
		if dec := do("read_secret", c[0], c[1]); dec.Verdict != intercept.Allow {
			t.Fatalf("the sensitive read: %s/%s, want allow", dec.Verdict, dec.Reason)
		}
	}
	for _, k := range store.keys {
		if n := len(k.String()); n > 4<<10 {
			t.Errorf("a memory's key of %d bytes (%.40q…)", n, k.String())
		}
	}
	for _, c := range []struct {
		agent, session string
		denied         bool
	}{
		{long, "s1", true},
		{long + "z", "s1", false},
		{"alice", longSession, true},
		{"alice", longSession + "z", false},
		{long, longSession, true},
		{long, longSession[:len(longSession)-1], false},
	} {
		if dec := do("post", c.agent, c.session); (dec.Verdict != intercept.Allow) != c.denied {
			t.Errorf("agent of %d bytes, session of %d: the sink is %s/%s, want denied %v", len(c.agent), len(c.session), dec.Verdict, dec.Reason, c.denied)
		}
	}
	// The long session ends: its memories go (not evicted: the sink is
	// allowed, not route_memory_evicted); the others stay.
	before := store.Len()
	store.ForgetSession(longSession)
	if dec := do("post", "alice", longSession); dec.Verdict != intercept.Allow {
		t.Errorf("after the session ended, its memory is still there: %s/%s", dec.Verdict, dec.Reason)
	}
	if n := store.Len(); n != before-2 {
		t.Errorf("%d memories after the long session ended, want %d (its two gone)", n, before-2)
	}
	if dec := do("post", long, "s1"); dec.Verdict == intercept.Allow {
		t.Error("another session's memory went with the long session")
	}
}
