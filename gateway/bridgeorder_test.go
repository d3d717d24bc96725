package gateway

import (
	"context"
	"fmt"
	"log/slog"
	"testing"
	"testing/synctest"

	"github.com/sluicehq/sluice/intercept"
)

// TestAttackBridgeReaderOvertakesHanding: what a leaving client's stream
// held is handed on in order (handOn, handPump) to the GET stream, which
// has no room at once; the upstream's next notification, routed by its
// reader, went straight to the same GET stream and took the first slot
// its client freed, ahead of what was handed on before it: the client
// read the upstream's messages out of order (a task's "completed" before
// its "working", a progress past the call's end). The reader now waits
// behind what was handed on, as its answer to a task-augmented request
// already did.
func TestAttackBridgeReaderOvertakesHanding(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		note := func(i int) string {
			return fmt.Sprintf(`{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":%d}}`, i)
		}
		cc := intercept.CallContext{Upstream: "u", Agent: "alice"}
		get, left := newStream(), newStream()
		full := cap(get.ch)
		for i := range full {
			get.ch <- []byte(note(i))
		}
		for i := range cap(left.ch) {
			left.ch <- []byte(note(full + i))
		}
		b := &bridgeState{waiters: map[string]*stream{"1": left}, calls: map[string]bridgeCall{"1": {method: "tools/call", cc: cc}},
			cc: cc, streams: []*stream{left}, get: get}
		// The POST's client leaves: what its stream held waits for the
		// GET stream, which is full.
		b.release(left, []string{"1"}, errCancelled)
		// The upstream says something more.
		const later = 1000
		routed := make(chan struct{})
		go func() {
			defer close(routed)
			w := &withheldTasks{log: slog.New(slog.DiscardHandler)}
			b.route(context.Background(), &intercept.Interceptor{Decider: permissive}, w, &session{}, []byte(note(later)))
		}()
		synctest.Wait() // the pump and the reader wait for the GET stream's client

		want := make([]string, 0, full+cap(left.ch)+1)
		for i := range full + cap(left.ch) {
			want = append(want, note(i))
		}
		want = append(want, note(later))
		for i, w := range want {
			got := string(<-get.ch)
			if got != w {
				t.Fatalf("the GET stream's message %d is %s, want %s: the reader's message overtook what was handed on before it", i, got, w)
			}
			synctest.Wait()
		}
		<-routed
	})
}

// TestBridgeHeldTaskStatusOnItsAnswersStream: a stdio server may write a
// task's notifications/tasks/status before the handle that makes the
// task the client's; the bridge holds it, and releases it once the
// handle is recorded, "where it arrived, before the answer". But the
// answer's stream was unlisted as the answer was routed, before the
// release: the status went to the GET stream or, with none, the backlog,
// and a client reading its call's stream got the handle alone.
func TestBridgeHeldTaskStatusOnItsAnswersStream(t *testing.T) {
	const (
		status = `{"jsonrpc":"2.0","method":"notifications/tasks/status","params":{"taskId":"t1","status":"completed"}}`
		handle = `{"jsonrpc":"2.0","id":1,"result":{"task":{"taskId":"t1","status":"working"}}}`
	)
	ic := &intercept.Interceptor{Decider: permissive}
	w := &withheldTasks{log: slog.New(slog.DiscardHandler)}
	cc := intercept.CallContext{Upstream: "u", Agent: "alice"}
	call := newStream()
	b := &bridgeState{waiters: map[string]*stream{"1": call}, calls: map[string]bridgeCall{"1": {method: "tools/call", creates: true, cc: cc}},
		cc: cc, streams: []*stream{call}, tasks: newTaskHold(ic, w)}
	b.sink = &bridgeSink{b}
	b.tasks.expect(1)
	ctx := context.Background()
	b.route(ctx, ic, w, &session{}, []byte(status))
	b.route(ctx, ic, w, &session{}, []byte(handle))
	var got []string
	for len(call.ch) > 0 {
		got = append(got, string(<-call.ch))
	}
	if len(got) != 2 || got[0] != status || got[1] != handle {
		t.Errorf("the call's stream got %q, want the status, then the handle (backlog: %q)", got, b.backlog)
	}
}

// TestBridgeAnswerPassesStalledHanding: what is handed on waits for the
// GET stream, which its client does not read; the answer to a request
// waiting on its own POST stream goes there at once all the same, as
// before handing on existed: a GET stream the client does not read must
// not hold the answers to its calls.
func TestBridgeAnswerPassesStalledHanding(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		note := `{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"x"}}`
		const answer = `{"jsonrpc":"2.0","id":2,"result":{"content":[]}}`
		cc := intercept.CallContext{Upstream: "u", Agent: "alice"}
		get, left, call := newStream(), newStream(), newStream()
		for range cap(get.ch) {
			get.ch <- []byte(note)
		}
		left.ch <- []byte(note)
		b := &bridgeState{waiters: map[string]*stream{"1": left}, calls: map[string]bridgeCall{"1": {method: "tools/call", cc: cc}},
			cc: cc, streams: []*stream{left}, get: get}
		b.release(left, []string{"1"}, errCancelled)
		synctest.Wait() // handPump waits for the GET stream
		// The client's next call.
		b.mu.Lock()
		b.waiters["2"], b.calls["2"] = call, bridgeCall{method: "tools/call", cc: cc}
		b.streams = append(b.streams, call)
		b.mu.Unlock()
		routed := make(chan struct{})
		go func() {
			defer close(routed)
			w := &withheldTasks{log: slog.New(slog.DiscardHandler)}
			b.route(context.Background(), &intercept.Interceptor{Decider: permissive}, w, &session{}, []byte(answer))
		}()
		synctest.Wait()
		select {
		case got := <-call.ch:
			if string(got) != answer {
				t.Errorf("the call's stream got %s, want its answer", got)
			}
		default:
			t.Error("the answer waits behind what was handed on to the GET stream, which nobody reads")
		}
		get.goneOnce.Do(func() { close(get.gone) })
		<-routed
	})
}

// TestBridgeBackloggedRequestMayBeAnswered: a request of the upstream's
// (a sampling request, a ping) that comes while the session has no
// stream open waits in the backlog for the next GET stream; on a session
// closed to its client (ids.go) the client's answer reaches the upstream
// only if the request is remembered as asked (askedUp), and one that went
// to the backlog was not: the answer was dropped, and the upstream waited
// for it for ever.
func TestBridgeBackloggedRequestMayBeAnswered(t *testing.T) {
	const ask = `{"jsonrpc":"2.0","id":"up-1","method":"ping"}`
	b := &bridgeState{waiters: map[string]*stream{}, calls: map[string]bridgeCall{}}
	sess := &session{}
	w := &withheldTasks{log: slog.New(slog.DiscardHandler)}
	m, _ := b.route(context.Background(), &intercept.Interceptor{Decider: permissive}, w, sess, []byte(ask))
	if len(b.backlog) != 1 {
		t.Fatalf("the backlog holds %d messages, want the upstream's request", len(b.backlog))
	}
	if m == nil || !sess.askedUp.take(m.IDKey()) {
		t.Error("the upstream's request in the backlog is not remembered as asked: the client's answer to it would not be passed on")
	}
}
