package gateway

import (
	"context"
	"log/slog"
	"testing"

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
