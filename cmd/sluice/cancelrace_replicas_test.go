package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/redistest"
)

// stallingRedis is a TCP proxy to srv that holds back, once, the first
// command holding every one of marks until release is closed; seen is
// closed when it is held.
type stallingRedis struct {
	addr    string
	seen    chan struct{}
	release chan struct{}
}

func stallRedis(t *testing.T, srv *redistest.Server, marks ...string) *stallingRedis {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	s := &stallingRedis{addr: ln.Addr().String(), seen: make(chan struct{}), release: make(chan struct{})}
	var once sync.Once
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			r, err := net.Dial("unix", srv.Socket)
			if err != nil {
				c.Close()
				continue
			}
			t.Cleanup(func() { c.Close(); r.Close() })
			go func() { _, _ = io.Copy(c, r) }()
			go func() {
				buf := make([]byte, 64<<10)
				for {
					n, err := c.Read(buf)
					if n > 0 {
						hit := true
						for _, m := range marks {
							hit = hit && bytes.Contains(buf[:n], []byte(m))
						}
						if hit {
							held := false
							once.Do(func() { held = true; close(s.seen) })
							if held {
								<-s.release
							}
						}
						if _, err := r.Write(buf[:n]); err != nil {
							return
						}
					}
					if err != nil {
						return
					}
				}
			}()
		}
	}()
	return s
}

// TestCancelBeforeHoldRecordedAcrossServeReplicas: two `sluice serve`
// replicas with one session key, agent_tasks and approvals in one real
// redis-server. A client whose user can be asked calls add on A, which
// holds it for approval; before A has recorded the hold in Redis (its
// write is held back here), the client's cancellation of that call
// reaches B, which finds nothing held. B leaves a mark for the id (a
// tombstone, lapsing with the hold's TTL), and A, recording the hold,
// finds it: the call is not held, its approval request is withdrawn, an
// operator's approval through B is refused, and the call never reaches
// the upstream. Before, the cancellation was lost: the call stayed held,
// and an operator's approval ran it.
func TestCancelBeforeHoldRecordedAcrossServeReplicas(t *testing.T) {
	srv := redistest.Start(t)
	var rec upstreamLog
	record, upstreamSaw := rec.wrap, rec.saw
	// A's hold record: the one command naming an approval request and
	// the hold's TTL (2m).
	stall := stallRedis(t, srv, "apr_", "120000")
	cfg := func(tasks string) string {
		return holdAdd + "admin_token: t0k\n" +
			"session_keys: [\"" + base64.StdEncoding.EncodeToString([]byte(strings.Repeat("k", 32))) + "\"]\n" +
			"agent_tasks: {redis_url: \"" + tasks + "\", timeout: 10s}\n" +
			"approvals: {client_may_answer: true, timeout: 1m, redis_url: \"" + srv.URL() + "\"}\n"
	}
	a := startServeWith(t, cfg("redis://"+stall.addr+"/0"), record)
	b := startServeWith(t, cfg(srv.URL()), record)

	hdr := session2025(t, a.url, "agent", `{"elicitation":{}}`)

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	callDone := make(chan string, 1)
	go func() {
		resp, err := openPost(ctx, a.url, hdr, `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"add","arguments":{"a":2,"b":3}}}`)
		if err != nil {
			callDone <- err.Error()
			return
		}
		defer resp.Body.Close()
		// The question, if the call is held; the stream then stays open
		// until the call is decided.
		got, _ := readUntil(resp.Body, "elicitation/create")
		callDone <- got
	}()
	select {
	case <-stall.seen:
	case s := <-callDone:
		t.Fatalf("the call was answered before A recorded its hold: %s", s)
	case <-ctx.Done():
		t.Fatal("A never recorded the hold")
	}
	if status, _, body := postWithHeaders(t, b.url, hdr, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":7,"reason":"gave up"}}`); status != http.StatusAccepted {
		t.Fatalf("the cancellation through B: %d %s", status, body)
	}
	close(stall.release)
	answer := <-callDone
	if strings.Contains(answer, "elicitation/create") {
		t.Errorf("A asked its user to approve the call cancelled before its hold was recorded: %q", answer)
	}

	apr, listing := heldOn(t, ctx, b.admin)
	if !strings.Contains(listing, "withdrawn") {
		t.Errorf("approvals list on B: %s, want the request withdrawn (A's answer: %q)", listing, answer)
	}
	if err := runApprovals(ctx, []string{"approve", apr, "--by", "ops", "--admin", "http://" + b.admin, "--token", "t0k"}, io.Discard); err == nil {
		t.Errorf("an operator approved, through B, the call the client cancelled through B")
	}
	time.Sleep(200 * time.Millisecond) // an approved call would be on its way
	if upstreamSaw(`"name":"add"`) {
		t.Errorf("the cancelled call reached the upstream")
	}
}
