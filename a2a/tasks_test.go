package a2a

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"

	"strings"
	"sync"
	"testing"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/sluicehq/sluice/intercept"
)

type mapTasks struct {
	mu     sync.Mutex
	m      map[string]string
	down   bool
	claims int
}

func (s *mapTasks) Claim(_ context.Context, key, owner string) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.claims++
	if s.down {
		return "", errors.New("down")
	}
	if _, ok := s.m[key]; !ok {
		s.m[key] = owner
	}
	return s.m[key], nil
}

func (s *mapTasks) Owner(_ context.Context, key string) (string, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.down {
		return "", false, errors.New("down")
	}
	o, ok := s.m[key]
	return o, ok, nil
}

// TestSharedTaskOwners: two replicas sharing a store agree on who owns a
// task; the first owner stays; an empty owner (no authentication) is an
// owner; a store that is down makes unseen tasks not found.
func TestSharedTaskOwners(t *testing.T) {
	ctx := context.Background()
	store := &mapTasks{m: map[string]string{}}
	a, b := newOwners(10, store, slog.New(slog.DiscardHandler)), newOwners(10, store, slog.New(slog.DiscardHandler))
	a.add(ctx, "ag", "t1", "alice", "alice")
	b.add(ctx, "ag", "t1", "bob", "bob") // a second claim changes nothing
	if !b.owns(ctx, "ag", "t1", "alice") || b.owns(ctx, "ag", "t1", "bob") || a.owns(ctx, "ag", "t1", "bob") {
		t.Error("owner of t1 is not alice on both replicas")
	}
	a.add(ctx, "ag", "t2", "", "")
	if !b.owns(ctx, "ag", "t2", "") {
		t.Error("an unauthenticated task is not found on the other replica")
	}
	a.add(ctx, "ag", "t3", "alice", "alice")
	store.mu.Lock()
	store.down = true
	store.mu.Unlock()
	c := newOwners(10, store, slog.New(slog.DiscardHandler))
	if c.owns(ctx, "ag", "t3", "alice") {
		t.Error("with the store down an unseen task was found")
	}
	if !a.owns(ctx, "ag", "t3", "alice") {
		t.Error("the replica that saw the task lost it when the store went down")
	}
}

// TestTaskOwnerNotTakenWhileStoreDown: an answer to alice through
// replica b names bob's task (created through a; an agent's mistake, or
// worse) while the shared store does not answer. Neither then nor once
// the store answers again is the task alice's on b, and it stays bob's
// there; a task alice started through b meanwhile is hers once the store
// answers, on every replica. Before, b took the first answer's caller
// as the owner when the store did not answer: alice read bob's task
// through b, and bob lost it there, until b restarted.
func TestTaskOwnerNotTakenWhileStoreDown(t *testing.T) {
	ctx := context.Background()
	store := &mapTasks{m: map[string]string{}}
	a, b := newOwners(100, store, slog.New(slog.DiscardHandler)), newOwners(100, store, slog.New(slog.DiscardHandler))
	a.add(ctx, "ag", "bobs", "bob", "bob")
	setDown := func(down bool) {
		store.mu.Lock()
		store.down = down
		store.mu.Unlock()
	}
	setDown(true)
	b.add(ctx, "ag", "bobs", "alice", "alice")
	b.add(ctx, "ag", "alices", "alice", "alice")
	if b.owns(ctx, "ag", "bobs", "alice") {
		t.Error("with the store down, bob's task is alice's on b")
	}
	setDown(false)
	if b.owns(ctx, "ag", "bobs", "alice") || !b.owns(ctx, "ag", "bobs", "bob") {
		t.Error("once the store answers again, bob's task is not bob's alone on b")
	}
	if !b.owns(ctx, "ag", "alices", "alice") || !a.owns(ctx, "ag", "alices", "alice") {
		t.Error("a task alice started through b while the store was down is not hers once it answers")
	}
}

// TestStreamClaimsEachTaskOnce: an agent's stream of many events about
// one task asks the shared store to claim the task (and its context)
// once, not at every event: while the store does not answer each claim
// waits out agent_tasks.timeout (500ms), and every event of the stream
// was held that long (twice: the task and its context) before the
// caller got it.
func TestStreamClaimsEachTaskOnce(t *testing.T) {
	const events = 20
	var srv *httptest.Server
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet {
			io.WriteString(w, strings.ReplaceAll(goodCard, "BASE", srv.URL))
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		for range events {
			io.WriteString(w, `data: {"jsonrpc":"2.0","id":1,"result":{"kind":"status-update","taskId":"t-s","contextId":"c-s","status":{"state":"working"}}}`+"\n\n")
		}
	}))
	t.Cleanup(srv.Close)
	store := &mapTasks{m: map[string]string{}}
	gw := serve(t, allow, srv.URL, Options{Tasks: store})
	_, got := post(t, gw.URL+"/a2a/stub", "", `{"jsonrpc":"2.0","id":1,"method":"message/stream","params":{"message":{"kind":"message","messageId":"m","role":"user","parts":[{"kind":"text","text":"hi"}]}}}`)
	if n := strings.Count(got, "t-s"); n != events {
		t.Fatalf("the caller got %d events, want %d: %.300s", n, events, got)
	}
	store.mu.Lock()
	defer store.mu.Unlock()
	if store.claims > 3 { // the task, its context, and the task's being in it
		t.Errorf("a stream of %d events about one task and context: %d claims in the shared store, want 3", events, store.claims)
	}
}

// TestTaskStoreDownSaysSo: a task, or a context, this replica has not
// seen, asked about while the shared store does not answer, is refused
// "not found" saying the store did not answer (try again), not as a task
// that is gone; with the store up, one it does not hold is just not
// found.
func TestTaskStoreDownSaysSo(t *testing.T) {
	rec := newRecAgent(t, goodCard)
	store := &mapTasks{m: map[string]string{}, down: true}
	gw := serve(t, allow, rec.srv.URL, Options{Tasks: store})
	get := `{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{"id":"t-elsewhere"}}`
	turn := `{"jsonrpc":"2.0","id":2,"method":"message/send","params":{"message":{"kind":"message","messageId":"m","role":"user","contextId":"c-elsewhere","parts":[{"kind":"text","text":"hi"}]}}}`
	for _, body := range []string{get, turn} {
		if _, got := post(t, gw.URL+"/a2a/stub", "", body); !strings.Contains(got, "-32001") || !strings.Contains(got, "shared task store") {
			t.Errorf("%s, the store down: %s; want -32001 saying the shared task store did not answer", body, got)
		}
	}
	store.mu.Lock()
	store.down = false
	store.mu.Unlock()
	if _, got := post(t, gw.URL+"/a2a/stub", "", get); !strings.Contains(got, "task not found") || strings.Contains(got, "shared task store") {
		t.Errorf("a task no replica saw, the store up: %s; want task not found, and no word of the store", got)
	}
}

func TestTaskIDs(t *testing.T) {
	for _, tc := range []struct {
		result string
		want   []string
	}{
		{`{"kind":"task","id":"t1","contextId":"c","artifacts":[{"parts":[{"text":"{\"taskId\":\"x\"}"}]}]}`, []string{"t1"}},
		{`{"kind":"status-update","taskId":"t2"}`, []string{"t2"}},
		{`{"task":{"id":"t3","history":[{"taskId":"t3"}]}}`, []string{"t3"}},
		{`{"statusUpdate":{"taskId":"t4"}}`, []string{"t4"}},
		{`{"message":{"taskId":"t5"}}`, []string{"t5"}},
		{`[1]`, nil},
	} {
		var got []string
		for _, id := range taskIDs(jsontext.Value(tc.result)) {
			if id != "" {
				got = append(got, id)
			}
		}
		if strings.Join(got, ",") != strings.Join(tc.want, ",") {
			t.Errorf("%s: %v, want %v", tc.result, got, tc.want)
		}
	}
}

// TestTextArgumentsAsMarshal: the text-only fast path writes what
// json.Marshal writes, and refuses what it refuses.
func TestTextArgumentsAsMarshal(t *testing.T) {
	type args struct {
		Text string `json:"text,omitzero"`
	}
	for _, text := range []string{"", "hi", "a\nb\t\"q\" \\ </script>&", "emoji 😀 \u2028 \u0001 日本語", "bad \xff utf8"} {
		got, gotErr := textArguments(text)
		want, wantErr := json.Marshal(args{text}, json.Deterministic(true))
		if (gotErr != nil) != (wantErr != nil) || gotErr == nil && string(got) != string(want) {
			t.Errorf("%q: got %s (%v), json.Marshal %s (%v)", text, got, gotErr, want, wantErr)
		}
	}
}

// TestAttackUnclaimedFloodDuringStall: while the shared store does not
// answer, the owners of the tasks a replica sees are kept apart
// (unclaimed) to claim once it answers, at most maxUnclaimed of them,
// an arbitrary one forgotten past that. Mallory, starting tasks without
// end during the stall, pushed out alice's: once the store answered,
// alice's task was "not found" for good. One caller now holds at most a
// tenth of them and pushes out only its own.
func TestAttackUnclaimedFloodDuringStall(t *testing.T) {
	ctx := context.Background()
	unclaimedFlood(t, ctx, ctx, "alice", "mallory", "alice", "mallory")
}

// unclaimedFlood has mallory (of share mShare) start 10*maxUnclaimed
// tasks while the shared store does not answer, after alice (aShare)
// started one; once the store answers, alice's task must be hers and
// mallory's newest hers.
func unclaimedFlood(t *testing.T, alice, mallory context.Context, aOwner, mOwner, aShare, mShare string) {
	t.Helper()
	store := &mapTasks{m: map[string]string{}, down: true}
	o := newOwners(100, store, slog.New(slog.DiscardHandler))
	o.add(alice, "ag", "alices", aOwner, aShare)
	for i := range 10 * maxUnclaimed {
		o.add(mallory, "ag", fmt.Sprint("mallory-", i), mOwner, mShare)
	}
	store.mu.Lock()
	store.down = false
	store.mu.Unlock()
	if !o.owns(alice, "ag", "alices", aOwner) {
		t.Fatal("alice's task, started while the store did not answer, is not found as hers once it answers: mallory's tasks pushed it out")
	}
	if !o.owns(mallory, "ag", fmt.Sprint("mallory-", 10*maxUnclaimed-1), mOwner) {
		t.Error("mallory's newest task is not found once the store answers: a caller past its share keeps its newest")
	}
}

// TestAttackUnclaimedFloodUnauthenticated: unauthenticated callers are
// one owner (""), and Unclaimed gives the unnamed share no bound, so the
// tenth each caller may keep while the shared store does not answer
// (TestAttackUnclaimedFloodDuringStall) bound no unauthenticated one:
// mallory, with no credential, starting tasks without end during a stall
// pushed out the task another unauthenticated client started meanwhile,
// "not found" for good once the store answered. An unauthenticated
// caller's keys now count against its address, as its relays and
// deliveries do (callerShare).
func TestAttackUnclaimedFloodUnauthenticated(t *testing.T) {
	alice := intercept.WithClientAddr(context.Background(), "192.0.2.7")
	mallory := intercept.WithClientAddr(context.Background(), "192.0.2.66")
	unclaimedFlood(t, alice, mallory, "", "", callerShare(alice), callerShare(mallory))
}

// TestAttackTaskFloodUnauthenticated: the owner table keeps one owner's
// tasks within a tenth of it, but not the unnamed owner's ("", every
// unauthenticated caller): one client with no credential starting tasks
// without end pushed out the tasks of every other unauthenticated
// client, "not found" from then on. Their tasks now count against their
// caller's address, as in intercept (shareOf).
func TestAttackTaskFloodUnauthenticated(t *testing.T) {
	alice := intercept.WithClientAddr(context.Background(), "192.0.2.7")
	mallory := intercept.WithClientAddr(context.Background(), "192.0.2.66")
	o := newOwners(100, nil, slog.New(slog.DiscardHandler))
	o.add(alice, "ag", "alices", "", callerShare(alice))
	for i := range 1000 {
		o.add(mallory, "ag", fmt.Sprint("mallory-", i), "", callerShare(mallory))
	}
	if !o.owns(alice, "ag", "alices", "") {
		t.Fatal("the task an unauthenticated client started is not found: another unauthenticated client's tasks pushed it out")
	}
	if !o.owns(mallory, "ag", "mallory-999", "") {
		t.Error("mallory's newest task is not found: a caller past its share keeps its newest")
	}
}
