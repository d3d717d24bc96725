package gateway

import (
	"bytes"
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/approval"
	"github.com/sluicehq/sluice/gateway/transport"
)

// TestAttackGoneClientHeldCallRuns: a connection (/ws, /sse, `sluice
// wrap`'s stdio) is its client's session. A client that went away while
// one of its calls was held for its user's approval left the approval
// request pending: an operator saw it in `sluice approvals list` and
// could approve a call nobody waited for any more — on a virtual server
// over /ws the hold went on after the connection had gone, and the
// approved call ran upstream. Its end now abandons its held calls as a
// DELETE abandons a session's (TestAttackDeletedSessionHeldCallRuns):
// their requests are withdrawn, and no approval sends one.
func TestAttackGoneClientHeldCallRuns(t *testing.T) {
	virtual := Options{VirtualServers: []VirtualServer{{Naming: NamingPrefix}}}
	for _, c := range []struct {
		name string
		opts Options
		tool string
		dial func(base string, g *Gateway) transport.Dialer
	}{
		{"ws", Options{}, "add", func(base string, _ *Gateway) transport.Dialer {
			return &transport.WSDialer{URL: "ws" + strings.TrimPrefix(base, "http") + "/ws/u"}
		}},
		{"sse", Options{}, "add", func(base string, _ *Gateway) transport.Dialer {
			return &transport.SSEDialer{URL: base + "/sse/u"}
		}},
		{"wrap", Options{}, "add", func(_ string, g *Gateway) transport.Dialer { return wrapDialer{t: t, g: g} }},
		{"virtual server, ws", virtual, "u_add", func(base string, _ *Gateway) transport.Dialer {
			return &transport.WSDialer{URL: "ws" + strings.TrimPrefix(base, "http") + "/ws"}
		}},
		{"virtual server, sse", virtual, "u_add", func(base string, _ *Gateway) transport.Dialer {
			return &transport.SSEDialer{URL: base + "/sse"}
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx, conn, _, _, store, up := heldOnConnWith(t, c.opts, c.tool, c.dial)
			conn.Close() // the client goes away while its user is asked
			wait, stop := context.WithTimeout(ctx, 5*time.Second)
			if req, _ := store.Wait(wait, onlyRequest(t, store).ID); req.Status == approval.Pending {
				t.Errorf("the approval request of a call held when its client went away: still pending, want it withdrawn")
			}
			stop()
			// An operator approves it from `sluice approvals list` (or
			// tries to).
			checkWithdrawn(t, store)
			ran := func() bool {
				for _, m := range up.got() {
					if bytes.Contains(m, []byte(`"name":"add"`)) {
						return true
					}
				}
				return false
			}
			if onlyRequest(t, store).Status == approval.Approved {
				// Whatever approved it may still send it: give it time.
				for deadline := time.Now().Add(2 * time.Second); !ran() && time.Now().Before(deadline); {
					time.Sleep(10 * time.Millisecond)
				}
			}
			if ran() {
				t.Errorf("the held call of a client that had gone away ran upstream once an operator approved it")
			}
		})
	}
}

// wrapDialer connects to upstream "u" of g as `sluice wrap`'s client
// does: g serves one end of a pair of pipes (ServeConn), the Conn
// returned is the other, and closing it closes the client's stdout,
// the gateway's stdin.
type wrapDialer struct {
	t *testing.T
	g *Gateway
}

func (d wrapDialer) Dial(context.Context) (transport.Conn, error) {
	toGW, fromClient := io.Pipe()
	toClient, fromGW := io.Pipe()
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = d.g.ServeConn(context.Background(), "u", transport.NewStdioConn(toGW, fromGW, nil))
		fromGW.Close()
	}()
	d.t.Cleanup(func() { fromClient.Close(); <-done })
	return &pipeConn{Conn: transport.NewStdioConn(toClient, fromClient, nil), w: fromClient}, nil
}
