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
