package gateway

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluicehq/sluice/approval"
	"github.com/sluicehq/sluice/examples/demo-server/demo"
	"github.com/sluicehq/sluice/intercept"
)

// TestAttackExpiredSessionHeldCallRuns: a call of a sealed session is
// held for its user's approval; the session reaches its maximum age
// (session_max_age) and its id is refused, as it is on every replica.
// An operator's approval after that must not run the call of the
// session no replica serves any more, nor stay usable. Before, the
// approved call ran upstream and its answer came on the stream.
func TestAttackExpiredSessionHeldCallRuns(t *testing.T) {
	rec := &recorder{next: demo.NewHTTPHandler(demo.NewServer(demo.Options{}), demo.HTTPOptions{})}
	up := httptest.NewServer(rec)
	t.Cleanup(up.Close)
	store := approval.NewStore(approval.Options{})
	dec := &approval.Gate{Next: &intercept.StaticDecider{Default: intercept.Allow, Approval: []string{"add"}, Mode: intercept.ModeToolResult}, Store: store}
	g, err := New(Options{Upstreams: []Upstream{{Name: "demo", URL: up.URL + "/mcp"}}, Approver: store, SessionKeys: [][]byte{key(1)}, SessionMaxAge: time.Hour},
		&intercept.Interceptor{Decider: dec}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	var skew atomic.Int64
	g.sealer.now = func() time.Time { return time.Now().Add(time.Duration(skew.Load())) }
	gw := httptest.NewServer(g.Handler())
	t.Cleanup(func() { closeServed(t, gw, g) })
	url := gw.URL + "/mcp/demo"
	hdr := initializeWith(t, url, `{"elicitation":{"form":{}}}`)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	rd, _ := askedToApprove(t, ctx, url, hdr, "add")

	skew.Store(int64(2 * time.Hour))
	if status, _, body := post(t, url, hdr, `{"jsonrpc":"2.0","id":9,"method":"ping"}`); status != http.StatusNotFound {
		t.Fatalf("the session past its maximum age: %d %s, want 404", status, body)
	}
	_, _ = store.Decide(onlyRequest(t, store).ID, true, "operator")
	answered := false
	for {
		ev, err := rd.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(ev.Data), `"result":{"content"`) {
			t.Errorf("the held call of the expired session was answered: %s", ev.Data)
		}
		answered = answered || strings.Contains(string(ev.Data), "session expired")
	}
	if !answered {
		t.Errorf("the held call of the expired session: no error saying the session expired")
	}
	if r := onlyRequest(t, store); r.Status != approval.Withdrawn {
		t.Errorf("the approval of the expired session's call: %s, want it ended (an approval left usable sends the call again in another session)", r.Status)
	}
	if rec.count(`"name":"add"`) > 0 {
		t.Errorf("the held call of a session past its maximum age ran upstream once approved")
	}
}
