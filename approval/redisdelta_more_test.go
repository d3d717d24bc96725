package approval

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/sluicehq/sluice/intercept"
)

// TestRedisStoreCatchUpMatchesFullReadEverywhere: as
// TestRedisStoreCatchUpMatchesFullRead, with what that one leaves out:
// requests expiring (sweeps), Abandon, continuations (UpstreamAsked), and
// an agent whose name is longer than a finished request keeps (cut, and
// matched by its hash). The state compared is every request as encoded
// and the key each call is linked under, not only the linked ids.
func TestRedisStoreCatchUpMatchesFullReadEverywhere(t *testing.T) {
	continued := 0
	seen := map[Status]bool{}
	for seed := range uint64(4) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) { continued += catchUpMatchesFullRead(t, seed, seen) })
	}
	if continued == 0 || !seen[Expired] || !seen[Withdrawn] || !seen[Declined] || !seen[Used] {
		t.Errorf("the runs had %d continuations and the statuses %v: want continuations, expiries, withdrawals, declines and uses", continued, seen)
	}
}

// catchUpMatchesFullRead runs the test with seed, notes in seen the
// statuses its requests had, and returns how many continuations went on.
func catchUpMatchesFullRead(t *testing.T, seed uint64, seen map[Status]bool) int {
	ctx := context.Background()
	var mu sync.Mutex
	now := time.Unix(1_800_000_000, 0)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	open, _ := openRedisPair(t, Options{Timeout: time.Minute, History: 6, Now: clock})
	stores := []*Store{open(), open(), open()}
	check := open()
	rng := rand.New(rand.NewPCG(seed, 4))
	agents := []string{"agent-0", "agent-1", strings.Repeat("L", maxHistoryName+50)}
	pay := func(agent string, n int) *intercept.ActionDescriptor {
		return &intercept.ActionDescriptor{TxnID: intercept.NewTxnID(), ToolName: "pay", Upstream: "bank", Agent: agent,
			Parameters: jsontext.Value(fmt.Sprintf(`{"amount":%d}`, n))}
	}
	type continuation struct {
		agent string
		n     int
		state string
	}
	var asked []continuation
	continued := 0
	for step := range 600 {
		s := stores[rng.IntN(len(stores))]
		agent := agents[rng.IntN(len(agents))]
		n := rng.IntN(4)
		switch op := rng.IntN(8); op {
		case 0, 1: // a call: held, or let through once approved
			g := &Gate{Next: holdPay, Store: s}
			if d := intercept.Decide(ctx, g, pay(agent, n)); d.Verdict == intercept.Allow {
				if err := g.Forwarded(ctx, pay(agent, n), d); err != nil {
					t.Fatal(err)
				}
				if rng.IntN(2) == 0 {
					st := fmt.Sprintf("state-%d", step)
					g.UpstreamAsked(ctx, d.ApprovalID, st)
					asked = append(asked, continuation{agent, n, st})
				}
			}
		case 2, 3, 4: // an answer to a live one
			live, err := s.Current()
			if err != nil {
				t.Fatal(err)
			}
			if len(live) == 0 {
				continue
			}
			r := live[rng.IntN(len(live))]
			switch {
			case op == 4:
				_, err = s.Abandon(r.ID, "sluice")
			case r.Status != Pending:
			case op == 2:
				_, err = s.Decide(r.ID, rng.IntN(2) == 0, "ops")
			default:
				_, err = s.Withdraw(r.ID, "mcp-cancel")
			}
			if err != nil && !errors.Is(err, ErrNotPending) { // expired meanwhile
				t.Fatalf("step %d: %v", step, err)
			}
		case 7: // a continuation: the call sent again with its upstream's state
			if len(asked) == 0 {
				continue
			}
			c := asked[rng.IntN(len(asked))]
			d := pay(c.agent, c.n)
			d.UpstreamState = c.state
			g := &Gate{Next: holdPay, Store: s}
			if dec := intercept.Decide(ctx, g, d); dec.Verdict == intercept.Allow {
				if dec.Reason == ReasonContinued {
					continued++
				}
				if err := g.Forwarded(ctx, d, dec); err != nil {
					t.Fatal(err)
				}
			}
		case 5: // time passes: some expire
			mu.Lock()
			now = now.Add(time.Duration(rng.IntN(40)) * time.Second)
			mu.Unlock()
		case 6: // a sweep
			err := s.lock()
			s.sweep(true)
			if err := s.unlock(err); err != nil {
				t.Fatal(err)
			}
		}
		for _, r := range check.List() {
			seen[r.Status] = true
		}
		for i, s := range stores {
			a := fullStateOf(t, s, false)
			want := fullStateOf(t, check, true)
			if !reflect.DeepEqual(a, want) {
				t.Fatalf("step %d: store %d following changes differs from a full read:\n%s", step, i, stateDiff(a, want))
			}
		}
	}
	return continued
}

type fullState struct {
	Requests map[string]string // id -> the request encoded
	Linked   map[string]string // call key -> id
	Done     []string
	Live     int
}

func fullStateOf(t *testing.T, s *Store, full bool) fullState {
	t.Helper()
	if full {
		s.mu.Lock()
		s.version = ""
		s.mu.Unlock()
	}
	err := s.lock()
	defer s.unlock(err)
	if err != nil {
		t.Fatal(err)
	}
	st := fullState{Requests: map[string]string{}, Linked: map[string]string{}, Done: slices.Clone(s.done), Live: s.live}
	for id, r := range s.byID {
		b, err := json.Marshal(r, json.Deterministic(true))
		if err != nil {
			t.Fatal(err)
		}
		st.Requests[id] = string(b)
	}
	for k, r := range s.byCall {
		st.Linked[k] = r.ID
		if s.byID[r.ID] != r {
			st.Linked[k] += " (not the request in the store)"
		}
	}
	return st
}

// stateDiff says where a differs from want, names cut short.
func stateDiff(a, want fullState) string {
	short := func(s string) string {
		if len(s) > 300 {
			return s[:150] + "..." + s[len(s)-150:]
		}
		return s
	}
	var b strings.Builder
	for id, r := range a.Requests {
		if w, ok := want.Requests[id]; !ok {
			fmt.Fprintf(&b, "request %s held, not in a full read: %s\n", id, short(r))
		} else if w != r {
			fmt.Fprintf(&b, "request %s:\n  held %s\n  full %s\n", id, short(r), short(w))
		}
	}
	for id, w := range want.Requests {
		if _, ok := a.Requests[id]; !ok {
			fmt.Fprintf(&b, "request %s missing: %s\n", id, short(w))
		}
	}
	for k, id := range a.Linked {
		if want.Linked[k] != id {
			fmt.Fprintf(&b, "link %s -> %s, full read: %q\n", short(k), id, want.Linked[k])
		}
	}
	for k, id := range want.Linked {
		if _, ok := a.Linked[k]; !ok {
			fmt.Fprintf(&b, "link %s -> %s missing\n", short(k), id)
		}
	}
	if !slices.Equal(a.Done, want.Done) {
		fmt.Fprintf(&b, "history %v, full read %v\n", a.Done, want.Done)
	}
	if a.Live != want.Live {
		fmt.Fprintf(&b, "live %d, full read %d\n", a.Live, want.Live)
	}
	return b.String()
}

// TestRedisStoreSweepHistoryOrder: the requests one sweep expires join
// the history in Redis in the order the sweeping store's memory has
// them. They were written in map order, each taking its place in Redis's
// history so: the sweeping store, which since c56dbb0 keeps its own
// memory after a commit, ordered its history otherwise than every other
// replica (which read Redis's), and dropped other oldest ones.
func TestRedisStoreSweepHistoryOrder(t *testing.T) {
	ctx := context.Background()
	var mu sync.Mutex
	now := time.Unix(1_800_000_000, 0)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	open, _ := openRedisPair(t, Options{Timeout: time.Minute, History: 100, Now: clock})
	a, check := open(), open()
	g := &Gate{Next: holdPay, Store: a}
	for round := range 3 { // each order equally likely: 1 in 720^3 to pass by chance
		for i := range 6 {
			if d := intercept.Decide(ctx, g, call(fmt.Sprintf(`{"amount":%d}`, round*10+i))); d.Verdict != intercept.RequireApproval {
				t.Fatalf("call %d: %s %s, want it held", i, d.Verdict, d.Reason)
			}
		}
		mu.Lock()
		now = now.Add(2 * time.Minute)
		mu.Unlock()
		err := a.lock()
		if n := len(a.sweep(true)); n != 6 {
			t.Fatalf("the sweep expired %d requests, want 6", n)
		}
		if err := a.unlock(err); err != nil {
			t.Fatal(err)
		}
	}
	if got, want := fullStateOf(t, a, false).Done, fullStateOf(t, check, true).Done; !slices.Equal(got, want) {
		t.Errorf("the sweeping store's history:\n%v\nRedis's:\n%v", got, want)
	}
}
