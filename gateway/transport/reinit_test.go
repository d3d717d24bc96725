package transport

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"
)

// Review of 8b12414: a message written while a second initialize is
// unanswered now waits at most initHold (2 s) and then goes with the
// *previous* session's id. Before, it waited for the new session's id.
// An upstream slow to answer initialize (cold start, an auth proxy) gets
// the message under the old session: the message written for the new
// session lands in another one.
func TestMessageAfterReinitializeNotOldSession(t *testing.T) {
	var mu sync.Mutex
	var inits int
	got := make(chan string, 1)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			w.WriteHeader(http.StatusMethodNotAllowed)
			return
		}
		body, _ := io.ReadAll(r.Body)
		switch {
		case bytes.Contains(body, []byte(`"initialize"`)):
			mu.Lock()
			inits++
			n := inits
			mu.Unlock()
			if n == 2 {
				time.Sleep(3 * time.Second) // slow to answer the new session
			}
			w.Header().Set("Mcp-Session-Id", fmt.Sprintf("s%d", n))
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%d,"result":{"protocolVersion":"2025-06-18","capabilities":{},"serverInfo":{"name":"s","version":"1"}}}`, n)
		case bytes.Contains(body, []byte(`"notifications/roots/list_changed"`)):
			select {
			case got <- r.Header.Get("Mcp-Session-Id"):
			default:
			}
			w.WriteHeader(http.StatusAccepted)
		default:
			w.WriteHeader(http.StatusAccepted)
		}
	}))
	defer ts.Close()
	ctx := httpTestCtx(t)
	c := httpDial(t, &StreamableHTTPDialer{URL: ts.URL + "/mcp"})
	defer c.Close()
	if err := c.Write(ctx, []byte(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":`+httpInitParams+`}`)); err != nil {
		t.Fatal(err)
	}
	httpWantResult(t, httpRead(t, ctx, c))
	if err := c.Write(ctx, []byte(`{"jsonrpc":"2.0","id":2,"method":"initialize","params":`+httpInitParams+`}`)); err != nil {
		t.Fatal(err)
	}
	go func() { c.Read(ctx) }() // the second initialize's answer
	if err := c.Write(ctx, []byte(`{"jsonrpc":"2.0","method":"notifications/roots/list_changed"}`)); err != nil {
		t.Fatal(err)
	}
	select {
	case sid := <-got:
		// The new session's id is not known yet (its initialize is
		// slower than the hold): the message must not go to the session
		// being replaced.
		if sid == "s1" {
			t.Errorf("a message written after the second initialize went with the old session %q", sid)
		}
	case <-time.After(8 * time.Second):
		t.Fatal("the message never arrived")
	}
}
