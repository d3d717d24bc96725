package gateway

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-json-experiment/json"

	"github.com/sluicehq/sluice/gateway/transport"
)

// connRecorder dials through d and keeps the connections it made, so a
// test can end one as an upstream that dies would.
type connRecorder struct {
	d    transport.Dialer
	mu   sync.Mutex
	made []transport.Conn
}

func (r *connRecorder) Dial(ctx context.Context) (transport.Conn, error) {
	c, err := r.d.Dial(ctx)
	if err == nil {
		r.mu.Lock()
		r.made = append(r.made, c)
		r.mu.Unlock()
	}
	return c, err
}

// TestAttackStatelessFailStalledClient: when the shared connection of
// the requests without a principal breaks, its reader answers every
// pending call with an error, each handed over with stream.deliver,
// which waits for the call's client to read. A client that sent a call
// with a progress token and never reads its answer (its stream's channel
// full of progress) keeps the reader waiting for good: every other
// client's call still pending behind it in the loop hangs without an
// answer, and the gateway's Close waits on the reader, for as long as
// the client's socket stalls (WriteStallTimeout, here an hour; a client
// that reads a trickle, for good).
func TestAttackStatelessFailStalledClient(t *testing.T) {
	const others = 8
	big := strings.Repeat("x", 64<<10)
	up := &scriptUpstream{handle: func(msg []byte) [][]byte {
		var r reqView
		if json.Unmarshal(msg, &r) != nil || r.Method != "tools/call" || len(r.Params.Meta.ProgressToken) == 0 {
			return nil // held: never answered
		}
		out := make([][]byte, 0, 160)
		for i := range 160 {
			out = append(out, []byte(fmt.Sprintf(`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":%s,"progress":%d,"message":"%s"}}`, r.Params.Meta.ProgressToken, i, big)))
		}
		return out
	}}
	rec := &connRecorder{d: up}
	g, base := startScriptedGateway(t, up, Options{WriteStallTimeout: time.Hour})
	g.routes["u"].dialer = rec
	b := g.stateless["u"].shared

	stalledPost(t, strings.TrimPrefix(base, "http://"), strings.Replace(modernCall(1, "echo", `{}`), `"_meta":{`, `"_meta":{"progressToken":"stall",`, 1))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	// Wait (bounded) for the stalled client's channel to be full.
	for full := false; !full; time.Sleep(20 * time.Millisecond) {
		if ctx.Err() != nil {
			t.Fatal("the stalled client's stream never filled")
		}
		b.mu.Lock()
		for _, c := range b.calls {
			full = full || (c.upToken != "" && len(c.s.ch) == cap(c.s.ch))
		}
		b.mu.Unlock()
	}

	answers := make(chan string, others)
	for i := range others {
		go func() {
			req, _ := http.NewRequestWithContext(ctx, http.MethodPost, base+"/mcp/u", strings.NewReader(modernCall(i+2, "echo", `{}`)))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			for k, v := range modernHeaders("tools/call", "echo") {
				req.Header.Set(k, v)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				answers <- "error: " + err.Error()
				return
			}
			defer resp.Body.Close()
			var sb strings.Builder
			buf := make([]byte, 4096)
			for {
				n, err := resp.Body.Read(buf)
				sb.Write(buf[:n])
				if err != nil {
					break
				}
			}
			answers <- sb.String()
		}()
	}
	for pending := 0; pending < others+1; time.Sleep(20 * time.Millisecond) {
		if ctx.Err() != nil {
			t.Fatal("the other clients' calls never reached the upstream")
		}
		b.mu.Lock()
		pending = len(b.calls)
		b.mu.Unlock()
	}

	// The upstream goes away.
	b.mu.Lock()
	read := b.read
	b.mu.Unlock()
	rec.mu.Lock()
	_ = rec.made[0].Close()
	rec.mu.Unlock()

	for range others {
		select {
		case a := <-answers:
			if !strings.Contains(a, `"error"`) || !strings.Contains(a, `is unavailable`) {
				t.Errorf("a client whose call's upstream went away got %.300q, not an error naming it", a)
			}
		case <-ctx.Done():
			t.Fatal("clients of the shared connection got no answer once its upstream went away: its reader waits on a client that does not read")
		}
	}
	select {
	case <-read:
	case <-ctx.Done():
		t.Fatal("the shared connection's reader never returned: it waits on a client that does not read")
	}
}
