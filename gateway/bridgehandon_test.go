package gateway

import (
	"context"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/sluicehq/sluice/intercept"
)

// TestBridgeHandsOnWhatALeavingClientDidNotTake: the messages a bridged
// session's POST stream held when its client left (waiting in the
// stream's channel, or being delivered as it went) were dropped, and
// counted nowhere: a sampling request the stdio server then waited on for
// ever, a log message, a late answer. Now they go on as route would have
// sent them had the stream not been open: the upstream's requests and
// notifications to another POST stream, else the GET stream or the
// backlog the next GET stream takes; an answer to the GET stream, where
// the client takes it by its id (as the late answer to an orphan goes).
func TestBridgeHandsOnWhatALeavingClientDidNotTake(t *testing.T) {
	const (
		ask    = `{"jsonrpc":"2.0","id":"s1","method":"sampling/createMessage","params":{"messages":[],"maxTokens":1}}`
		note   = `{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"x"}}`
		answer = `{"jsonrpc":"2.0","id":1,"result":{"content":[]}}`
		later  = `{"jsonrpc":"2.0","method":"notifications/resources/updated","params":{"uri":"file:///a"}}`
	)
	cc := intercept.CallContext{Upstream: "u", Agent: "alice"}
	left := newStream()
	b := &bridgeState{waiters: map[string]*stream{"1": left}, calls: map[string]bridgeCall{"1": {method: "tools/call", cc: cc}},
		cc: cc, streams: []*stream{left}}
	for _, m := range []string{ask, note, answer} {
		left.ch <- []byte(m)
	}
	b.release(left, []string{"1"}, errCancelled)
	if len(b.streams) != 0 {
		t.Fatalf("the left stream is still listed: %d streams", len(b.streams))
	}
	want := []string{ask, note, answer}
	if len(b.backlog) != len(want) {
		t.Fatalf("backlog holds %d messages, want the %d the client left: %q", len(b.backlog), len(want), b.backlog)
	}
	for i, m := range want {
		if string(b.backlog[i]) != m {
			t.Errorf("backlog[%d] = %s, want %s", i, b.backlog[i], m)
		}
	}

	// A stream whose client left while route delivers to it: the
	// message goes on to the GET stream, which takes it.
	b.backlog, b.backlogBytes = nil, 0
	gone := newStream()
	gone.goneOnce.Do(func() { close(gone.gone) })
	get := newStream()
	b.streams, b.get = []*stream{gone}, get
	w := &withheldTasks{log: slog.New(slog.DiscardHandler)}
	b.route(context.Background(), &intercept.Interceptor{Decider: permissive}, w, &session{}, []byte(later))
	select {
	case got := <-get.ch:
		if string(got) != later {
			t.Errorf("the GET stream got %s, want %s", got, later)
		}
	default:
		t.Errorf("the notification route delivered to a stream whose client left is lost (backlog %q)", b.backlog)
	}
	if len(b.streams) != 0 {
		t.Errorf("the stream whose client left is still listed")
	}
}

// TestBridgeReleaseWaitsForNoClient: release, which a POST handler runs
// as it returns, handed on what its stream's client had not taken by
// delivering it, waiting while the stream it went to had no room: a GET
// stream open but not read (its handler stuck writing to a client that
// reads nothing) kept the POST handler from returning for as long, and
// the server's Close or Shutdown waiting for that handler. Now release
// returns at once; what the GET stream has no room for waits for it, in
// order, and goes to the backlog if it ends without taking it.
func TestBridgeReleaseWaitsForNoClient(t *testing.T) {
	note := func(i int) string {
		return fmt.Sprintf(`{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":%d}}`, i)
	}
	cc := intercept.CallContext{Upstream: "u", Agent: "alice"}
	get, left := newStream(), newStream()
	for i := range cap(get.ch) {
		get.ch <- []byte(note(i))
	}
	b := &bridgeState{waiters: map[string]*stream{"1": left}, calls: map[string]bridgeCall{"1": {method: "tools/call", cc: cc}},
		cc: cc, streams: []*stream{left}, get: get}
	full := cap(get.ch)
	for i := range cap(left.ch) {
		left.ch <- []byte(note(full + i))
	}
	released := make(chan struct{})
	go func() {
		defer close(released)
		b.release(left, []string{"1"}, errCancelled)
	}()
	select {
	case <-released:
	case <-time.After(10 * time.Second):
		// Let it go: the GET stream's client leaves.
		get.goneOnce.Do(func() { close(get.gone) })
		<-released
		t.Fatal("release waited for the GET stream, which nobody reads, to take what the leaving client did not")
	}

	// What the GET stream had no room for reaches it, in order, as its
	// client reads.
	for i := range full + cap(left.ch) {
		select {
		case got := <-get.ch:
			if string(got) != note(i) {
				t.Fatalf("the GET stream's message %d is %s, want %s", i, got, note(i))
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("the GET stream got %d messages, want %d", i, full+cap(left.ch))
		}
	}

	// What is handed on while the GET stream has no room, it ending
	// without taking it, goes to the backlog the next GET stream takes.
	for i := range cap(get.ch) {
		get.ch <- []byte(note(i))
	}
	late := newStream()
	b.mu.Lock()
	b.streams = []*stream{late}
	b.mu.Unlock()
	late.ch <- []byte(note(100))
	b.release(late, nil, errCancelled)
	get.goneOnce.Do(func() { close(get.gone) })
	b.release(get, nil, nil)
	deadline := time.Now().Add(10 * time.Second)
	for {
		b.mu.Lock()
		backlog := append([][]byte(nil), b.backlog...)
		b.mu.Unlock()
		if len(backlog) >= cap(get.ch)+1 {
			// Every one of them, in any order: what reached the GET
			// stream before and what waited for it race to the backlog.
			want := map[string]int{note(100): 1}
			for i := range cap(get.ch) {
				want[note(i)]++
			}
			for _, m := range backlog {
				want[string(m)]--
			}
			for m, n := range want {
				if n != 0 {
					t.Errorf("the backlog holds %s %d times too few (%d messages: %q)", m, n, len(backlog), backlog)
				}
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the backlog holds %d messages, want the %d the GET stream left and what waited for it", len(backlog), cap(get.ch)+1)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestBridgeSinkWaitsForNoClient: a message held about a task (taskhold.go)
// is released through the bridge's sink by settle, which runs in release
// and bridgePost too, on a handler's goroutine, under the hold's lock: it
// delivered waiting while the stream it went to had no room (a GET
// stream open but not read), the handler and every other user of the
// hold with it. It is handed on now, as release hands on.
func TestBridgeSinkWaitsForNoClient(t *testing.T) {
	const note = `{"jsonrpc":"2.0","method":"notifications/tasks/status","params":{"taskId":"t1","status":"completed"}}`
	get := newStream()
	for range cap(get.ch) {
		get.ch <- []byte(`{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"x"}}`)
	}
	b := &bridgeState{waiters: map[string]*stream{}, calls: map[string]bridgeCall{}, get: get}
	b.sink = &bridgeSink{b}
	sent := make(chan struct{})
	go func() {
		defer close(sent)
		_ = b.sink.send([]byte(note))
	}()
	select {
	case <-sent:
	case <-time.After(10 * time.Second):
		get.goneOnce.Do(func() { close(get.gone) })
		<-sent
		t.Fatal("the sink waited for the GET stream, which nobody reads, to take a held message")
	}
	for i := 0; ; i++ {
		select {
		case got := <-get.ch:
			if string(got) == note {
				return
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("the held message never reached the GET stream (%d others did)", i)
		}
	}
}
