package gateway

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestWrapStatelessCancel: `sluice wrap` in front of an HTTP mcp-go server
// (the module's, as TestTransparency runs it), a 2026-07-28 go-sdk client
// on its stdio. The client cancels a call with notifications/cancelled, as
// stdio has it; over Streamable HTTP a stateless request is cancelled by
// closing its response stream, and mcp-go's server refuses the
// notification. Before, the gateway POSTed it without the session's
// version (it named none in _meta), was refused 404 and ended the
// connection: every later request failed. A notification the upstream
// refuses (notifications/roots/list_changed, 400) ended it too.
func TestWrapStatelessCancel(t *testing.T) {
	h := mcpGoHTTPHandler()
	var mu sync.Mutex
	var posted []string
	slowDone := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(b))
		mu.Lock()
		posted = append(posted, r.Header.Get("Mcp-Method"))
		mu.Unlock()
		h.ServeHTTP(w, r)
		if strings.Contains(string(b), `"name":"slow"`) {
			close(slowDone)
		}
	}))
	t.Cleanup(srv.Close)
	g, _ := startPermissiveGateway(t, Upstream{Name: "up", URL: srv.URL + "/mcp"})
	r, w := wrapped(t, g)()

	started := make(chan struct{}, 1)
	c := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, &mcp.ClientOptions{
		ProgressNotificationHandler: func(context.Context, *mcp.ProgressNotificationClientRequest) {
			select {
			case started <- struct{}{}:
			default:
			}
		},
	})
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	cs, err := c.Connect(ctx, &mcp.IOTransport{Reader: io.NopCloser(r), Writer: w}, &mcp.ClientSessionOptions{ProtocolVersion: "2026-07-28"})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()

	cctx, ccancel := context.WithCancel(ctx)
	called := make(chan error, 1)
	go func() {
		p := &mcp.CallToolParams{Name: "slow", Arguments: map[string]any{}}
		p.SetProgressToken("tok")
		_, err := cs.CallTool(cctx, p)
		called <- err
	}()
	select {
	case <-started:
	case <-ctx.Done():
		t.Fatal("the slow call never started")
	}
	ccancel()
	<-called
	select {
	case <-slowDone:
	case <-time.After(2 * time.Second): // it runs 3s unless cancelled
		t.Error("the upstream's slow call was not cancelled: its response stream was not closed")
	}

	echo := func(what string) {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "hi"}})
		if err != nil || res.IsError {
			t.Fatalf("echo %s: got %v, %+v, want its result", what, err, res)
		}
	}
	echo("after the cancellation")
	c.AddRoots(&mcp.Root{URI: "file:///two", Name: "two"}) // notifications/roots/list_changed, refused
	echo("after a notification the upstream refused")

	mu.Lock()
	defer mu.Unlock()
	for _, m := range posted {
		if m == "notifications/cancelled" {
			t.Errorf("the upstream was sent notifications/cancelled, want its POST closed only")
		}
	}
}
