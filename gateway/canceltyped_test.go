package gateway

import (
	"bytes"
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/approval"
	"github.com/sluicehq/sluice/examples/demo-server/demo"
	"github.com/sluicehq/sluice/intercept"
)

// typedAdd is the demo server with add listed under an outputSchema.
type typedAdd struct{ next http.Handler }

func (h typedAdd) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		h.next.ServeHTTP(w, r)
		return
	}
	rec := httptest.NewRecorder()
	h.next.ServeHTTP(rec, r)
	for k, v := range rec.Header() {
		if k != "Content-Length" {
			w.Header()[k] = v
		}
	}
	w.WriteHeader(rec.Code)
	w.Write(bytes.ReplaceAll(rec.Body.Bytes(), []byte(`"name":"add"`), []byte(`"name":"add","outputSchema":{"type":"object","properties":{"sum":{"type":"number"}},"required":["sum"]}`)))
}

// TestCancelAfterGivingUpTypedTool is TestCancelAfterGivingUp's virtual
// server for a tool whose listing declares an outputSchema: its held
// answer carries no structuredContent (the envelope would not match the
// schema), and the virtual server read the hold from there alone. It
// took the held answer for a finished call and forgot the client's
// request id at once: the client's cancellation named no call, and the
// request stayed pending for an operator to approve.
func TestCancelAfterGivingUpTypedTool(t *testing.T) {
	store := approval.NewStore(approval.Options{})
	dec := &approval.Gate{Next: &intercept.StaticDecider{Default: intercept.Allow, Approval: []string{"add"}, Mode: intercept.ModeToolResult}, Store: store}
	up := httptest.NewServer(typedAdd{demo.NewHTTPHandler(demo.NewServer(demo.Options{}), demo.HTTPOptions{})})
	t.Cleanup(up.Close)
	g, err := New(Options{Approver: store, VirtualServers: []VirtualServer{{Naming: NamingPrefix}},
		Upstreams: []Upstream{{Name: "demo", URL: up.URL + "/mcp"}}}, &intercept.Interceptor{Decider: dec}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	gw := httptest.NewServer(g.Handler())
	t.Cleanup(func() { closeServed(t, gw, g) })
	url := gw.URL + "/mcp"
	hdr := initializeWith(t, url, `{"elicitation":{}}`)
	if _, _, b := post(t, url, hdr, `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`); !strings.Contains(b, "outputSchema") {
		t.Fatalf("tools/list: %s; want demo_add with its outputSchema", b)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	rd, q := askedToApprove(t, ctx, url, hdr, "demo_add")
	if code, _, b := post(t, url, hdr, `{"jsonrpc":"2.0","id":`+string(q.ID)+`,"error":{"code":-32603,"message":"context canceled"}}`); code != http.StatusAccepted {
		t.Fatalf("the error answer: %d %s", code, b)
	}
	for {
		m, raw := nextMessage(t, rd)
		if m.Method == "" {
			if !strings.Contains(raw, `"isError":true`) || strings.Contains(raw, "structuredContent") {
				t.Fatalf("the call's answer: got %s, want the hold, without structuredContent", raw)
			}
			break
		}
	}
	if code, _, b := post(t, url, hdr, cancelAdd); code != http.StatusAccepted {
		t.Fatalf("notifications/cancelled: %d %s", code, b)
	}
	checkWithdrawn(t, store)
}
