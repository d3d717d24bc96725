package classifier

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/sluicehq/sluice/intercept"
)

// budgetClock is a clock the test moves.
type budgetClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *budgetClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *budgetClock) advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// budgetLLM is an LLM classifier at a fake OpenAI provider (its real wire
// format, over HTTP) with budget b.
func budgetLLM(t *testing.T, b LLMBudget) (*LLM, *fakeLLM, *budgetClock) {
	t.Helper()
	f := newFakeLLM(t, ProviderOpenAI)
	_, o := f.serve()
	clock := &budgetClock{t: time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)}
	o.Now, o.CacheSize, o.Budget, o.BreakerFailures = clock.now, -1, b, 1000
	return mustLLM(t, o), f, clock
}

// agentCall is a call of agent (authenticated) with arguments of its own
// (no cache hit).
func agentCall(agent string, i int) *intercept.ActionDescriptor {
	d := llmDescriptor(agent + "-session")
	d.Agent = agent
	d.Principal = &intercept.Principal{ID: agent, Method: "api_key"}
	d.Parameters = jsontext.Value(fmt.Sprintf(`{"invoice_id":"INV-%d"}`, i))
	return d
}

// wantOverBudget checks a verdict made over budget: every axis at its
// conservative default, marked so, composite 0, so it escalates; never a
// deny, which a verdict cannot make.
func wantOverBudget(t *testing.T, v Verdict, err error, scope string) {
	t.Helper()
	var obe *OverBudgetError
	if !errors.As(err, &obe) || !errors.Is(err, ErrOverBudget) || obe.Scope != scope {
		t.Fatalf("err %v, want an OverBudgetError of scope %q", err, scope)
	}
	for axis, av := range v.Axes.All() {
		if av.Source != SourceLLMOverBudget {
			t.Errorf("axis %s source %q, want %q", axis, av.Source, SourceLLMOverBudget)
		}
	}
	for axis, av := range v.Axes.All() {
		if av.Classified != ConservativeDefault(axis) || !av.ConservativeDefaultApplied {
			t.Errorf("axis %s %q, want its conservative default %q", axis, av.Classified, ConservativeDefault(axis))
		}
	}
	if a := Assess(v, Options{}); a.Composite != 0 || a.Disposition > Escalate {
		t.Errorf("assessment %+v, want a composite of 0 that escalates", a)
	}
}

// (Found by an attacker review.) TestAttackAgentFloodSpendsProvider: an
// agent calling tools in a loop, each call's arguments new, made the
// gateway send the paid provider a request per call, without bound (the
// cap of llmMaxPerAgent is on requests at once, and sequential calls
// never reach it). Past its budget a minute its calls are classified by
// the conservative defaults, as if the provider had not answered; other agents' are still sent,
// and a minute later its own are again.
func TestAttackAgentFloodSpendsProvider(t *testing.T) {
	l, f, clock := budgetLLM(t, LLMBudget{PerAgent: 5})
	ctx := context.Background()
	for i := range 30 {
		v, err := l.Classify(ctx, agentCall("mallory", i))
		if i < 5 {
			if err != nil {
				t.Fatalf("call %d: %v", i, err)
			}
			continue
		}
		wantOverBudget(t, v, err, BudgetAgent)
	}
	if n := f.calls.Load(); n != 5 {
		t.Fatalf("30 calls of one agent made %d requests at the provider, want its budget of 5", n)
	}
	if v, err := l.Classify(ctx, agentCall("alice", 0)); err != nil || v.Axes.Get(AxisActionType).Source != "llm_inference" {
		t.Errorf("alice's call: %v, %v; want the provider's verdict", v.Axes, err)
	}
	clock.advance(12 * time.Second) // a fifth of a minute: one more request
	if _, err := l.Classify(ctx, agentCall("mallory", 100)); err != nil {
		t.Errorf("mallory's call 12s on: %v, want it sent", err)
	}
	v, err := l.Classify(ctx, agentCall("mallory", 101))
	wantOverBudget(t, v, err, BudgetAgent)
	if n := f.calls.Load(); n != 7 {
		t.Errorf("%d requests at the provider, want 7", n)
	}
}

// TestAttackManyAgentsSpendProvider: agents each within their budget
// together are bounded by the total.
func TestAttackManyAgentsSpendProvider(t *testing.T) {
	l, f, _ := budgetLLM(t, LLMBudget{PerAgent: 100, Total: 8})
	over := 0
	for i := range 20 {
		v, err := l.Classify(context.Background(), agentCall(fmt.Sprintf("agent-%d", i), i))
		if err != nil {
			wantOverBudget(t, v, err, BudgetTotal)
			over++
		}
	}
	if n := f.calls.Load(); n != 8 || over != 12 {
		t.Errorf("20 agents' calls: %d requests, %d over budget; want 8 and 12", n, over)
	}
}

// TestLLMBudgetDefaults: a zero budget is 60 requests a minute per agent;
// a negative one no bound. Unauthenticated agents share their address's.
func TestLLMBudgetDefaults(t *testing.T) {
	l, f, _ := budgetLLM(t, LLMBudget{})
	ctx := intercept.WithClientAddr(context.Background(), "203.0.113.7")
	for i := range DefaultLLMBudgetPerAgent + 1 {
		d := llmDescriptor("s")
		d.Agent = fmt.Sprintf("mallory-%d", i) // a new name each call
		d.Parameters = jsontext.Value(fmt.Sprintf(`{"invoice_id":"INV-%d"}`, i))
		v, err := l.Classify(ctx, d)
		if i == DefaultLLMBudgetPerAgent {
			wantOverBudget(t, v, err, BudgetAgent)
		}
	}
	if n := f.calls.Load(); n != DefaultLLMBudgetPerAgent {
		t.Errorf("%d requests, want the default budget of %d", n, DefaultLLMBudgetPerAgent)
	}

	l, f, _ = budgetLLM(t, LLMBudget{PerAgent: -1, Total: -1})
	for i := range 100 {
		if _, err := l.Classify(context.Background(), agentCall("mallory", i)); err != nil {
			t.Fatalf("no budget: call %d: %v", i, err)
		}
	}
	if n := f.calls.Load(); n != 100 {
		t.Errorf("no budget: %d requests, want 100", n)
	}
}

// TestLLMBudgetCacheHitsFree: a verdict served from the cache costs
// nothing and spends no budget.
func TestLLMBudgetCacheHitsFree(t *testing.T) {
	f := newFakeLLM(t, ProviderOpenAI)
	_, o := f.serve()
	o.Budget = LLMBudget{PerAgent: 2}
	l := mustLLM(t, o)
	for range 10 {
		if _, err := l.Classify(context.Background(), agentCall("alice", 1)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := l.Classify(context.Background(), agentCall("alice", 2)); err != nil {
		t.Errorf("a second distinct call after 10 cached: %v, want it sent", err)
	}
	if n := f.calls.Load(); n != 2 {
		t.Errorf("%d requests, want 2", n)
	}
}

// (Found by a review.) TestAttackOverBudgetNoWeakerVerdict: a call over
// budget was classified by the built-in rules, so an agent that spent its
// own budget first chose the rules' verdict for its next call (Read, for
// read_invoice) over the conservative one a provider outage gives, and a
// rule on classification.action_type did not fire. Now a call over budget
// gets what a call the provider did not answer gets, on every axis.
func TestAttackOverBudgetNoWeakerVerdict(t *testing.T) {
	l, _, _ := budgetLLM(t, LLMBudget{PerAgent: 1})
	ctx := context.Background()
	_, _ = l.Classify(ctx, agentCall("mallory", 1))
	over, err := l.Classify(ctx, agentCall("mallory", 2))
	wantOverBudget(t, over, err, BudgetAgent)

	down, f, _ := budgetLLM(t, LLMBudget{})
	f.setMode(llm5xx)
	out, err := down.Classify(ctx, agentCall("mallory", 2))
	if err == nil {
		t.Fatal("no error from a failing provider")
	}
	for axis, av := range out.Axes.All() {
		if got := over.Axes.Get(axis).Classified; got != av.Classified {
			t.Errorf("axis %s over budget %q, in an outage %q: want the same", axis, got, av.Classified)
		}
	}
	if got := over.Axes.Get(AxisActionType).Classified; got == Read {
		t.Errorf("action_type over budget %q: the built-in rules' verdict, which the agent chose by spending its budget", got)
	}
}

// TestLLMBudgetNotSpentBreakerOpen: calls the open breaker refuses send
// nothing and spend none of the budget, which is whole when the provider
// is back.
func TestLLMBudgetNotSpentBreakerOpen(t *testing.T) {
	f := newFakeLLM(t, ProviderOpenAI)
	_, o := f.serve()
	o.Budget, o.CacheSize, o.BreakerFailures = LLMBudget{PerAgent: 3}, -1, 1
	l := mustLLM(t, o)
	f.setMode(llm5xx)
	if _, err := l.Classify(context.Background(), agentCall("alice", 0)); err == nil {
		t.Fatal("no error from a failing provider")
	}
	for i := range 10 {
		if _, err := l.Classify(context.Background(), agentCall("alice", 1+i)); errors.Is(err, ErrOverBudget) {
			t.Fatalf("call %d with the breaker open: %v, want the breaker's refusal", i, err)
		}
	}
	if n := f.calls.Load(); n != 1 {
		t.Errorf("%d requests with the breaker open, want 1", n)
	}
}

// TestLLMBudgetConcurrent: agents calling at once spend the budget
// exactly, each call sent or classified over budget (run with -race).
func TestLLMBudgetConcurrent(t *testing.T) {
	l, f, _ := budgetLLM(t, LLMBudget{PerAgent: 3, Total: 40})
	var wg sync.WaitGroup
	var mu sync.Mutex
	sent, over := 0, 0
	for a := range 30 {
		for i := range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, err := l.Classify(context.Background(), agentCall(fmt.Sprintf("agent-%d", a), a*10+i))
				mu.Lock()
				defer mu.Unlock()
				switch {
				case err == nil:
					sent++
				case errors.Is(err, ErrOverBudget):
					over++
				default:
					t.Errorf("agent %d call %d: %v", a, i, err)
				}
			}()
		}
	}
	wg.Wait()
	if n := f.calls.Load(); n != 40 || sent != 40 || over != 80 {
		t.Errorf("120 calls of 30 agents at once: %d requests, %d sent, %d over budget; want 40, 40, 80", n, sent, over)
	}
}

// TestLLMBudgetWindow: the budget is a token bucket, not a fixed minute:
// an agent flooding calls has a minute's worth at once and then one every
// 60/N seconds, so its first minute sends up to 2N-1 and every minute
// after N, never a fresh N at a minute's boundary.
func TestLLMBudgetWindow(t *testing.T) {
	const n = 60
	l, f, clock := budgetLLM(t, LLMBudget{PerAgent: n, Total: -1})
	minute := func(i int) int32 {
		before := f.calls.Load()
		for j := range 600 { // a call every 100 ms
			_, _ = l.Classify(context.Background(), agentCall("mallory", i*1000+j))
			clock.advance(100 * time.Millisecond)
		}
		return f.calls.Load() - before
	}
	if got := minute(0); got < 2*n-2 || got > 2*n-1 {
		t.Errorf("first minute of a flood: %d requests, want %d or %d (a minute's worth at once, then one a second)", got, 2*n-2, 2*n-1)
	}
	for i := 1; i < 5; i++ {
		if got := minute(i); got < n-1 || got > n+1 {
			t.Errorf("minute %d of a flood: %d requests, want about %d", i, got, n)
		}
	}
}

// TestLLMOverBudgetNotCached (review138): the verdict of a call over
// budget is not cached: once the budget refills, the same call is sent to
// the provider and gets its verdict, not the conservative one served
// again from the cache.
func TestLLMOverBudgetNotCached(t *testing.T) {
	f := newFakeLLM(t, ProviderOpenAI)
	_, o := f.serve()
	clock := &budgetClock{t: time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)}
	o.Now, o.Budget, o.BreakerFailures = clock.now, LLMBudget{PerAgent: 1}, 1000 // the cache at its default size
	l := mustLLM(t, o)
	ctx := context.Background()
	if _, err := l.Classify(ctx, agentCall("alice", 1)); err != nil {
		t.Fatal(err)
	}
	over, err := l.Classify(ctx, agentCall("alice", 2))
	wantOverBudget(t, over, err, BudgetAgent)
	clock.advance(time.Minute)
	v, err := l.Classify(ctx, agentCall("alice", 2))
	if err != nil {
		t.Fatalf("the call again once the budget refilled: %v, want it sent", err)
	}
	for axis, av := range v.Axes.All() {
		if av.Source == SourceLLMOverBudget {
			t.Errorf("axis %s: source %q once the budget refilled: the over-budget verdict was served again", axis, av.Source)
		}
	}
	if n := f.calls.Load(); n != 2 {
		t.Errorf("%d requests to the provider, want 2 (the call sent once the budget refilled)", n)
	}
}
