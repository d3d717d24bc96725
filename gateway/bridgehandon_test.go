package gateway

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/gateway/transport"
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
	b.takeBacklog()
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

// TestBridgeHandingCountsAgainstOverflowCap: what a leaving client's
// stream held and the stream it goes on to had no room for (b.handing)
// was bounded per session alone, by the backlog's bounds (16 MiB), and
// not counted in what the gateway holds for clients that do not read
// (maxOverflowTotal): sessions each with a GET stream open but not read,
// and a POST whose client left with its stream full, made the gateway
// hold 16 MiB each, however many they were. It counts now, the oldest
// given up past the cap (counted as dropped), and the count goes as it
// is delivered, and as the session ends (to the backlog).
func TestBridgeHandingCountsAgainstOverflowCap(t *testing.T) {
	const size = 16 << 10
	big := func(i int) []byte {
		return fmt.Appendf(nil, `{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"%d%s"}}`, i, strings.Repeat("x", size))
	}
	budget := &overflowBudget{max: 4 * size}
	cc := intercept.CallContext{Upstream: "u", Agent: "alice"}
	get, left := newStream(), newStream()
	for i := range cap(get.ch) {
		get.ch <- big(i)
	}
	b := &bridgeState{waiters: map[string]*stream{"1": left}, calls: map[string]bridgeCall{"1": {method: "tools/call", cc: cc}},
		cc: cc, streams: []*stream{left}, get: get, overflow: budget}
	for i := range cap(left.ch) {
		left.ch <- big(100 + i)
	}
	b.release(left, []string{"1"}, errCancelled)
	b.mu.Lock()
	handing, handed, dropped := b.handingBytes, len(b.handing), b.dropped
	b.mu.Unlock()
	if held := budget.held.Load(); held != int64(handing) || held > budget.max {
		t.Fatalf("%d messages (%d bytes) wait to be handed on, %d bytes of them counted: want them all counted, within the cap of %d", handed, handing, held, budget.max)
	}
	if dropped == 0 || handed == 0 {
		t.Errorf("dropped %d and kept %d of the %d handed on, want the oldest dropped past the cap", dropped, handed, cap(left.ch))
	}

	// Delivered, the newest last: no longer counted.
	var last []byte
	for i := range cap(get.ch) + cap(left.ch) - dropped {
		select {
		case last = <-get.ch:
		case <-time.After(10 * time.Second):
			t.Fatalf("the GET stream got %d messages, want %d", i, cap(get.ch)+cap(left.ch)-dropped)
		}
	}
	if want := big(100 + cap(left.ch) - 1); string(last) != string(want) {
		t.Errorf("the GET stream's last message is %.40s, want %.40s", last, want)
	}
	b.awaitHanded()
	if held := budget.held.Load(); held != 0 {
		t.Errorf("after delivery %d bytes are counted, want 0", held)
	}

	// Handed on again, then the GET stream ends: what waited goes to
	// the backlog, counted there (TestBridgeBacklogCountsAgainstOverflowCap).
	for i := range cap(get.ch) {
		get.ch <- big(i)
	}
	late := newStream()
	b.mu.Lock()
	b.streams = []*stream{late}
	b.mu.Unlock()
	for i := range 2 {
		late.ch <- big(200 + i)
	}
	b.release(late, nil, errCancelled)
	if held, want := budget.held.Load(), int64(len(big(200))); held < want || held > 2*want {
		t.Errorf("handed on 2 messages: %d bytes counted, want %d or %d (one may be on its way)", held, want, 2*want)
	}
	get.goneOnce.Do(func() { close(get.gone) })
	b.release(get, nil, nil)
	b.awaitHanded()
	b.mu.Lock()
	backlog, backlogBytes := len(b.backlog), b.backlogBytes
	b.mu.Unlock()
	if held := budget.held.Load(); held != int64(backlogBytes) {
		t.Errorf("after the GET stream ended %d bytes are counted, want the backlog's %d alone", held, backlogBytes)
	}
	if backlog < 2 {
		t.Errorf("backlog holds %d messages, want what waited for the GET stream", backlog)
	}
}

// TestBridgeBacklogCountsAgainstOverflowCap: what waits in a bridged
// session's backlog for a GET stream to open (the upstream's messages to
// a session with no stream open) was bounded per session alone (16 MiB),
// outside the gateway-wide cap of what is held for clients that do not
// read: a client opening sessions (up to max_sessions_per_client) whose
// upstreams write without end, and opening no GET stream, made the
// gateway hold 16 MiB for each. The backlog counts now, the oldest given
// up past the cap; the count goes as a GET stream takes the backlog, and
// as the session ends, after which nothing more waits in it.
func TestBridgeBacklogCountsAgainstOverflowCap(t *testing.T) {
	const size = 16 << 10
	big := func(i int) []byte {
		return fmt.Appendf(nil, `{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"%03d%s"}}`, i, strings.Repeat("x", size))
	}
	budget := &overflowBudget{max: 4 * size}
	done := make(chan struct{})
	close(done)
	b := &bridgeState{up: endedConn{}, done: done, overflow: budget}
	for i := range 16 {
		b.handOn(nil, big(i))
	}
	b.mu.Lock()
	kept, n, dropped := b.backlogBytes, len(b.backlog), b.dropped
	b.mu.Unlock()
	if held := budget.held.Load(); held != int64(kept) || held > budget.max {
		t.Fatalf("%d messages (%d bytes) wait in the backlog, %d bytes of them counted: want them all counted, within the cap of %d", n, kept, held, budget.max)
	}
	if dropped != 16-n || n == 0 {
		t.Errorf("dropped %d and kept %d of 16, want the oldest dropped past the cap", dropped, n)
	}

	backlog, _ := b.takeBacklog()
	if len(backlog) != n || string(backlog[n-1]) != string(big(15)) {
		t.Errorf("a GET stream took %d messages, the last %.40s; want %d, the newest last", len(backlog), backlog[len(backlog)-1], n)
	}
	if held := budget.held.Load(); held != 0 {
		t.Errorf("after a GET stream took the backlog %d bytes are counted, want 0", held)
	}

	for i := range 2 {
		b.handOn(nil, big(i))
	}
	if held, want := budget.held.Load(), 2*int64(len(big(0))); held != want {
		t.Errorf("2 messages in the backlog: %d bytes counted, want %d", held, want)
	}
	b.close()
	if held := budget.held.Load(); held != 0 {
		t.Errorf("after the session ended %d bytes are counted, want 0", held)
	}
	b.handOn(nil, big(2))
	b.mu.Lock()
	n = len(b.backlog)
	b.mu.Unlock()
	if held := budget.held.Load(); held != 0 || n != 0 {
		t.Errorf("handed on after the session ended: %d in the backlog, %d bytes counted; want none kept", n, held)
	}
}

// endedConn is an upstream connection that has ended.
type endedConn struct{}

func (endedConn) Read(context.Context) ([]byte, error) { return nil, transport.ErrClosed }
func (endedConn) Write(context.Context, []byte) error  { return transport.ErrClosed }
func (endedConn) Close() error                         { return nil }
