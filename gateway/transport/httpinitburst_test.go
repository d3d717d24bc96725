package transport

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/server"
)

// A stdio client (through `sluice wrap --url`) writes initialize and then
// notifications/initialized and its first requests at once, as it may:
// the session id comes with initialize's answer, so messages written
// before that answer must wait for it, not go out without the id (mcp-go
// answers those 404 "Invalid session ID", and the wrap died of it).
func TestStreamableHTTPWritesWaitForInitialize(t *testing.T) {
	slow := server.NewStreamableHTTPServer(httpTestMCPServer(nil), server.WithStreamableHTTPLogger(httpQuietLogger))
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			body, _ := io.ReadAll(r.Body)
			r.Body = io.NopCloser(bytes.NewReader(body))
			if bytes.Contains(body, []byte(`"initialize"`)) {
				time.Sleep(200 * time.Millisecond) // initialize is slow to answer
			}
		}
		slow.ServeHTTP(w, r)
	}))
	defer ts.Close()
	ctx := httpTestCtx(t)
	c := httpDial(t, &StreamableHTTPDialer{URL: ts.URL + "/mcp"})
	defer c.Close()
	if err := c.Write(ctx, []byte(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":`+httpInitParams+`}`)); err != nil {
		t.Fatal(err)
	}
	httpNotify(t, ctx, c, "notifications/initialized")
	if err := c.Write(ctx, []byte(`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)); err != nil {
		t.Fatalf("tools/list written right after initialize: %v", err)
	}
	got := map[string]httpMsg{}
	for len(got) < 2 {
		m := httpRead(t, ctx, c)
		got[string(m.ID)] = m
	}
	httpWantResult(t, got["1"])
	httpWantResult(t, got["2"])
}
