package classifier

import (
	"errors"
	"fmt"
	"sync"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"
)

// LLMBudget bounds the requests an LLM classifier sends its provider,
// which the operator pays for: without it one agent calling tools in a
// loop (each call's arguments new, so no cache hit) made a request per
// call. A call over the budget gets the verdict of a call the provider
// did not answer (see LLM): the agent spending its own budget must not buy
// its next call a weaker verdict than an outage gives. Verdicts served
// from the cache cost nothing and are not counted.
//
// Each bound is a token bucket, not a fixed minute: a minute's worth may
// be sent at once, and then one every 60/N seconds, so the first minute
// of a flood sends up to 2N-1 and every minute after it N
// (TestLLMBudgetWindow). The total is shared: agents that together spend
// it leave every agent's calls to the fallback until it refills.
type LLMBudget struct {
	// PerAgent is how many requests one agent's calls may make a minute
	// (an authenticated agent; unauthenticated ones by their address, as
	// for llmMaxPerAgent). Zero means 60; negative, no bound.
	PerAgent int `json:"per_agent_per_minute,omitempty" yaml:"per_agent_per_minute,omitempty"`
	// Total is how many requests every agent's calls together may make a
	// minute. Zero means 600; negative, no bound.
	Total int `json:"total_per_minute,omitempty" yaml:"total_per_minute,omitempty"`
}

// Budget defaults: an agent may have a call classified a second on
// average, in bursts of a minute's worth; all agents together ten.
const (
	DefaultLLMBudgetPerAgent = 60
	DefaultLLMBudgetTotal    = 600
)

// Budget scopes, as OverBudgetError.Scope and the metric's label.
const (
	BudgetAgent = "agent"
	BudgetTotal = "total"
)

// SourceLLMOverBudget marks each axis of the verdict of a call over the
// LLM classifier's budget (LLMBudget): its conservative default.
const SourceLLMOverBudget = "over_budget"

// ErrOverBudget is wrapped by the error of a classification made over the
// LLM classifier's budget (an *OverBudgetError).
var ErrOverBudget = errors.New("over the LLM classifier's budget")

// OverBudgetError is the error Classify returns with a verdict made over
// budget.
type OverBudgetError struct {
	Scope string // BudgetAgent or BudgetTotal
	Who   string // whose budget: `the agent "x"`, or the unauthenticated agents at an address
	Limit int    // requests a minute
}

func (e *OverBudgetError) Error() string {
	if e.Scope == BudgetTotal {
		return fmt.Sprintf("%v: every agent's calls together have had %d classified by the provider in the last minute; this one was not sent, and has every axis at its conservative default", ErrOverBudget, e.Limit)
	}
	return fmt.Sprintf("%v: %s had %d calls classified by the provider in the last minute; this one was not sent, and has every axis at its conservative default", ErrOverBudget, e.Who, e.Limit)
}

func (e *OverBudgetError) Unwrap() error { return ErrOverBudget }

// maxBudgetOwners bounds the agents whose budgets are kept: one more
// evicts the least recently seen, whose budget starts full again. What
// agents rotating through more addresses than this gain, the total
// budget still bounds.
const maxBudgetOwners = 4096

// budget is an LLMBudget in force: token buckets filled at their limit a
// minute, holding at most that.
type budget struct {
	perAgent, total int // <= 0: no bound

	mu     sync.Mutex
	all    bucket
	owners *lru.Cache[string, *bucket]
}

type bucket struct {
	tokens float64
	at     time.Time
}

func newBudget(b LLMBudget) (*budget, error) {
	bg := &budget{perAgent: b.PerAgent, total: b.Total}
	if bg.perAgent == 0 {
		bg.perAgent = DefaultLLMBudgetPerAgent
	}
	if bg.total == 0 {
		bg.total = DefaultLLMBudgetTotal
	}
	var err error
	bg.owners, err = lru.New[string, *bucket](maxBudgetOwners)
	return bg, err
}

// take spends one request of owner's at now, or reports the scope whose
// budget is spent; a request over one budget spends neither.
func (bg *budget) take(owner string, now time.Time) (scope string, ok bool) {
	bg.mu.Lock()
	defer bg.mu.Unlock()
	var b *bucket
	if bg.perAgent > 0 {
		var had bool
		if b, had = bg.owners.Get(owner); !had {
			b = &bucket{tokens: float64(bg.perAgent), at: now}
			bg.owners.Add(owner, b)
		}
		if !b.fill(bg.perAgent, now) {
			return BudgetAgent, false
		}
	}
	if bg.total > 0 {
		if bg.all.at.IsZero() {
			bg.all = bucket{tokens: float64(bg.total), at: now}
		}
		if !bg.all.fill(bg.total, now) {
			return BudgetTotal, false
		}
		bg.all.tokens--
	}
	if b != nil {
		b.tokens--
	}
	return "", true
}

// fill adds what a bucket of limit a minute earned since it was last
// filled, and reports whether it holds a whole request.
func (b *bucket) fill(limit int, now time.Time) bool {
	if d := now.Sub(b.at); d > 0 {
		b.tokens = min(float64(limit), b.tokens+float64(limit)*d.Minutes())
		b.at = now
	}
	return b.tokens >= 1
}
