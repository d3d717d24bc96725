package classifier

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

var urnRE = regexp.MustCompile(`^urn:sluice:classifier:[A-Za-z0-9._~%-]+:[0-9a-f]{16}$`)

func TestLifecycle(t *testing.T) {
	var mu sync.Mutex
	var trace []string
	at := time.Unix(100, 0)
	l := &Lifecycle{
		Now: func() time.Time { return at },
		OnEvent: func(e LifecycleEvent) {
			mu.Lock()
			defer mu.Unlock()
			trace = append(trace, fmt.Sprintf("%s %s inv=%s prev=%s n=%d mm=%d", e.Type, e.SessionID, e.InventoryHash, e.PreviousInventoryHash, e.Classified, e.Mismatches))
		},
	}
	id, ev := l.Provision("sess/1")
	if !urnRE.MatchString(id) || !strings.HasPrefix(id, "urn:sluice:classifier:sess%2F1:") {
		t.Errorf("id: got %q, want urn:sluice:classifier:sess%%2F1:<16 hex>", id)
	}
	if ev.Type != EventClassifierProvisioned || ev.ClassifierID != id || !ev.At.Equal(at) {
		t.Errorf("provision event: got %+v", ev)
	}
	if again, _ := l.Provision("sess/1"); again != id {
		t.Errorf("second Provision: got %q, want the same id %q", again, id)
	}
	if other, _ := l.Provision("sess/2"); other == id {
		t.Error("two sessions got the same id")
	}
	if _, re := l.ObserveInventory("sess/1", "h1"); re {
		t.Error("first inventory: got a re-initialisation, want none")
	}
	l.ObserveInventory("sess/1", "h1")
	if ev, re := l.ObserveInventory("sess/1", "h2"); !re || ev.Type != EventClassifierReinitialized || ev.ClassifierID != id {
		t.Errorf("inventory change: got %+v, %v; want a re-initialisation", ev, re)
	}
	ev, ok := l.Revoke("sess/1")
	if !ok || ev.Type != EventClassifierRevoked || ev.ClassifierID != id {
		t.Errorf("revoke: got %+v, %v", ev, ok)
	}
	if _, ok := l.Revoke("sess/1"); ok {
		t.Error("second Revoke: got true, want false")
	}
	if _, ok := l.ID("sess/1"); ok {
		t.Error("ID after revoke: got true, want false")
	}
	want := []string{
		"classifier.provisioned sess/1 inv= prev= n=0 mm=0",
		"classifier.provisioned sess/2 inv= prev= n=0 mm=0",
		"classifier.reinitialized sess/1 inv=h2 prev=h1 n=0 mm=0",
		"classifier.revoked sess/1 inv=h2 prev= n=0 mm=0",
	}
	if strings.Join(trace, "\n") != strings.Join(want, "\n") {
		t.Errorf("events:\ngot  %q\nwant %q", trace, want)
	}
}

func TestLifecycleWrap(t *testing.T) {
	var events []LifecycleEvent
	l := &Lifecycle{OnEvent: func(e LifecycleEvent) { events = append(events, e) }}
	c := l.Wrap(mustBuiltin(t, Options{}))
	call := builtinCall{target: stdioFS, tool: "read_file", ann: `{"readOnlyHint":true,"openWorldHint":false}`}
	d := call.descriptor()
	d.ToolInventoryHash = "inv1"
	v, err := c.Classify(context.Background(), d)
	if err != nil {
		t.Fatal(err)
	}
	id, ok := l.ID("s1")
	if !ok || v.ClassifierID != id {
		t.Errorf("classifier_id: got %q, want the session's %q", v.ClassifierID, id)
	}
	mismatch := call
	mismatch.declAction = Write
	d2 := mismatch.descriptor()
	d2.ToolInventoryHash = "inv2"
	if _, err := c.Classify(context.Background(), d2); err != nil {
		t.Fatal(err)
	}
	ev, _ := l.Revoke("s1")
	if ev.Classified != 2 || ev.Mismatches != 1 {
		t.Errorf("revoke counts: got classified=%d mismatches=%d, want 2 and 1", ev.Classified, ev.Mismatches)
	}
	var types []string
	for _, e := range events {
		types = append(types, e.Type)
	}
	if got, want := strings.Join(types, ","), "classifier.provisioned,classifier.reinitialized,classifier.revoked"; got != want {
		t.Errorf("events: got %s, want %s", got, want)
	}
}

func TestLifecycleConcurrent(t *testing.T) {
	l := &Lifecycle{}
	c := l.Wrap(mustBuiltin(t, Options{}))
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 50 {
				call := builtinCall{target: stdioFS, tool: "list_directory"}
				d := call.descriptor()
				d.SessionID = fmt.Sprintf("s%d", (g+i)%5)
				d.ToolInventoryHash = fmt.Sprintf("h%d", i%3)
				if _, err := c.Classify(context.Background(), d); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if got := l.Active(); got != 5 {
		t.Errorf("active: got %d, want 5", got)
	}
	for i := range 5 {
		l.Revoke(fmt.Sprintf("s%d", i))
	}
	if got := l.Active(); got != 0 {
		t.Errorf("active after revoking all: got %d, want 0", got)
	}
}

func TestURNSegment(t *testing.T) {
	for in, want := range map[string]string{"": "-", "abc-1.2_~": "abc-1.2_~", "a:b c": "a%3Ab%20c"} {
		if got := urnSegment(in); got != want {
			t.Errorf("urnSegment(%q): got %q, want %q", in, got, want)
		}
	}
}

// TestImmediate: the built-in classifier, wrapped or not, may run in line
// with the policy; a provider call, which may stall until its timeout,
// may not.
func TestImmediate(t *testing.T) {
	l := &Lifecycle{}
	b := mustBuiltin(t, Options{})
	llm := mustLLM(t, LLMOptions{Provider: ProviderGemini, BaseURL: llmClosedURL(t), APIKey: llmTestKey})
	for _, tc := range []struct {
		name string
		c    Classifier
		want bool
	}{{"builtin", b, true}, {"wrapped builtin", l.Wrap(b), true}, {"llm", llm, false}, {"wrapped llm", l.Wrap(llm), false}} {
		if got := Immediate(tc.c); got != tc.want {
			t.Errorf("%s: Immediate %v, want %v", tc.name, got, tc.want)
		}
	}
}
