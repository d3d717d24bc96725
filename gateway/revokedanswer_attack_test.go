package gateway

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/approval"
	"github.com/sluicehq/sluice/examples/demo-server/demo"
	"github.com/sluicehq/sluice/gateway/transport"
	"github.com/sluicehq/sluice/intercept"
)

// TestAttackRevokedPrincipalAnswered: a call on /mcp whose HTTP upstream
// answers with one JSON body (no event stream) had that answer passed on
// to a client whose credential was revoked while the upstream worked: the
// gateway asked about the credential when the POST came, never again,
// while the same answer sent as an event stream was withheld
// (TestAttackRevokedPrincipalStreamsOn). A long call's result — what a
// revoked agent most wants — is now withheld too: the call gets an error
// saying why, in both eras, and so is the answer to a call held for
// approval, approved by the client's user, whose credential was revoked
// while the upstream worked on it.
func TestAttackRevokedPrincipalAnswered(t *testing.T) {
	alice, revoked := revocable("alice")
	demoH := demo.NewHTTPHandler(demo.NewServer(demo.Options{}), demo.HTTPOptions{JSONResponse: true})
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		if bytes.Contains(b, []byte(`"tools/call"`)) {
			// The key is revoked while the upstream works on the call.
			revoked.Store(true)
		}
		r.Body = io.NopCloser(bytes.NewReader(b))
		demoH.ServeHTTP(w, r)
	}))
	t.Cleanup(up.Close)
	store := approval.NewStore(approval.Options{})
	gate := &approval.Gate{Next: &intercept.StaticDecider{Default: intercept.Allow, Approval: []string{"add"}}, Store: store}
	g, err := New(Options{Upstreams: []Upstream{{Name: "demo", URL: up.URL + "/mcp"}}, Approver: store},
		&intercept.Interceptor{Decider: gate}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close() })
	gw := servedAs(t, g, as(alice))

	const echo = `"name":"echo","arguments":{"message":"the secret result"}`
	for _, era := range []string{"2025-11-25", "2026-07-28"} {
		t.Run(era, func(t *testing.T) {
			revoked.Store(false)
			url := gw.URL + "/mcp/demo"
			var hdr map[string]string
			body := `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{` + echo + `}}`
			if era == "2025-11-25" {
				hdr = openSession(t, url, "c", nil)
			} else {
				hdr = modernHeaders("tools/call", "echo")
				body = `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{` + echo + `,"_meta":{` + meta2026 + `}}}`
			}
			_, _, got := post(t, url, hdr, body)
			if !revoked.Load() {
				t.Fatalf("the upstream never got the call; answer %.300s", got)
			}
			if strings.Contains(string(got), "the secret result") || !strings.Contains(string(got), "no longer holds") {
				t.Errorf("answer after the credential was revoked: %.300s; want an error saying the credential no longer holds", got)
			}
		})
	}

	t.Run("held", func(t *testing.T) {
		revoked.Store(false)
		url := gw.URL + "/mcp/demo"
		hdr := initializeWith(t, url, `{"elicitation":{"form":{}}}`)
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		rd := transport.NewSSEReader(openPost(t, ctx, url, hdr, addCall).Body)
		q, raw := nextMessage(t, rd)
		if q.Method != "elicitation/create" {
			t.Fatalf("want the gateway's question, got %s", raw)
		}
		post(t, url, hdr, `{"jsonrpc":"2.0","id":`+string(q.ID)+`,"result":{"action":"accept","content":{"approve":true}}}`)
		last, raw := nextMessage(t, rd)
		for last.Method != "" {
			last, raw = nextMessage(t, rd)
		}
		if !revoked.Load() {
			t.Fatalf("the upstream never got the approved call; final message %s", raw)
		}
		if strings.Contains(raw, `"result"`) || !strings.Contains(raw, "no longer holds") {
			t.Errorf("final message after the credential was revoked: %s; want an error saying the credential no longer holds", raw)
		}
	})
}

// TestAttackRevokedPrincipalHeldStdio: a call held for approval on a
// session bridged to a stdio upstream, approved by the client's user, went
// on passing the upstream's messages — progress, the result — to a client
// whose credential was revoked while the call ran: the approved call's
// stream was not asked about the credential, as every other stream is
// (TestAttackRevokedPrincipalStreamsOn). Now it ends with an error
// saying why.
func TestAttackRevokedPrincipalHeldStdio(t *testing.T) {
	store := approval.NewStore(approval.Options{})
	gate := &approval.Gate{Next: &intercept.StaticDecider{Default: intercept.Allow, Approval: []string{"slow_count"}}, Store: store}
	g, err := New(Options{Upstreams: []Upstream{
		{Name: "stdio", Command: os.Args[0], Args: []string{"-test.run=^TestHelperDemoStdio$"}, Env: map[string]string{"SLUICE_TEST_DEMO_STDIO": "1"}},
	}, Approver: store}, &intercept.Interceptor{Decider: gate}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	alice, revoked := revocable("alice")
	h := g.Handler()
	gw := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if alice.Check() != nil {
			http.Error(w, "revoked", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r.WithContext(intercept.WithPrincipal(r.Context(), alice)))
	}))
	t.Cleanup(func() { closeServed(t, gw, g) })
	url := gw.URL + "/mcp/stdio"
	hdr := initializeWith(t, url, `{"elicitation":{"form":{}}}`)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	const count = `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"slow_count","arguments":{"n":20,"delay_ms":50},"_meta":{"progressToken":"p"}}}`
	rd := transport.NewSSEReader(openPost(t, ctx, url, hdr, count).Body)
	q, raw := nextMessage(t, rd)
	if q.Method != "elicitation/create" {
		t.Fatalf("want the gateway's question, got %s", raw)
	}
	post(t, url, hdr, `{"jsonrpc":"2.0","id":`+string(q.ID)+`,"result":{"action":"accept","content":{"approve":true}}}`)
	progress, after := 0, 0
	for {
		m, raw := nextMessage(t, rd)
		if revoked.Load() {
			after++
		}
		if m.Method == "notifications/progress" {
			if progress++; progress == 2 {
				revoked.Store(true)
			}
			continue
		}
		if m.Method != "" {
			continue
		}
		if strings.Contains(raw, "counted to") || !strings.Contains(raw, "no longer holds") || after > 2 {
			t.Errorf("after its credential was revoked the approved call's stream carried %d more messages and ended with %.200s; want it to end at once with an error saying why", after, raw)
		}
		break
	}
	if progress < 2 {
		t.Fatalf("the approved call's stream: %d progress notifications", progress)
	}
}
