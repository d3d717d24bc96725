package gateway

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluicehq/sluice/intercept"
)

// getStreamProgressWeb is a Streamable HTTP upstream that sends the
// progress of its count tool on the session's GET stream, as the spec lets
// a server: the call is answered on its POST once release is closed.
func getStreamProgressWeb(release <-chan struct{}) http.Handler {
	events := make(chan string, 8)
	getOpen := make(chan struct{})
	var opened sync.Once
	mux := http.NewServeMux()
	mux.HandleFunc("/mcp", func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet {
			w.Header().Set("Content-Type", "text/event-stream")
			w.WriteHeader(http.StatusOK)
			w.(http.Flusher).Flush()
			opened.Do(func() { close(getOpen) })
			for {
				select {
				case e := <-events:
					fmt.Fprintf(w, "data: %s\n\n", e)
					w.(http.Flusher).Flush()
				case <-r.Context().Done():
					return
				}
			}
		}
		b, _ := io.ReadAll(r.Body)
		m, err := intercept.DecodeMessage(b)
		if err != nil || m.Kind != intercept.KindRequest {
			w.WriteHeader(http.StatusAccepted)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		result := func(res string) { fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":%s}`, m.ID, res) }
		switch {
		case m.Method == "initialize":
			w.Header().Set("Mcp-Session-Id", "s1")
			result(`{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"web","version":"1"}}`)
		case m.Method == "tools/list":
			result(`{"tools":[{"name":"web_search","inputSchema":{"type":"object"}},{"name":"count","inputSchema":{"type":"object"}}]}`)
		case m.IsCall() && m.Name == "count":
			select {
			case <-getOpen:
			case <-time.After(5 * time.Second):
			}
			tok := intercept.Member(m.Meta, "progressToken")
			for i := 1; i <= 2 && tok != nil; i++ {
				events <- `{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":` + string(tok) + `,"progress":` + itoa(i) + `,"total":2}}`
			}
			select {
			case <-release:
			case <-r.Context().Done():
			}
			result(`{"content":[{"type":"text","text":"counted"}]}`)
		default:
			result(`{}`)
		}
	})
	return mux
}

// TestClosedUpstreamProgressOnGetStream: a call to a closed upstream goes
// with the gateway's progress token in place of the client's, and the
// upstream sends its progress on the session's GET stream. The client
// got the gateway's token there (its progress lost: its own never came);
// it gets its own now, and the upstream still never sees it.
func TestClosedUpstreamProgressOnGetStream(t *testing.T) {
	release := make(chan struct{})
	web := &recorder{next: getStreamProgressWeb(release)}
	up := httptest.NewServer(web)
	t.Cleanup(up.Close)
	gw, _ := carryStack(t, Options{}, Upstream{Name: "web", URL: up.URL + "/mcp"})
	readSecret(t, gw.URL)
	u := gw.URL + "/mcp/web"
	hdr := initializeWith(t, u, `{}`)
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	get := openGetStream(ctx, t, u, hdr)
	const tok = "client-tok-7"
	answer := make(chan string, 1)
	go func() {
		resp, err := sendPost(ctx, u, hdr, `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"count","arguments":{},"_meta":{"progressToken":"`+tok+`"}}}`)
		if err != nil {
			answer <- err.Error()
			return
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		answer <- string(b)
	}()
	for i := 1; i <= 2; i++ {
		ev, err := get.Next()
		if err != nil {
			t.Fatalf("progress %d: the GET stream ended: %v", i, err)
		}
		if got := string(ev.Data); !strings.Contains(got, `"progressToken":"`+tok+`"`) {
			t.Errorf("progress %d: got %s, want it under the client's token %q", i, got, tok)
		}
	}
	close(release)
	if got := <-answer; !strings.Contains(got, "counted") || !strings.Contains(got, `"id":5`) {
		t.Errorf("count: got %s, want counted under id 5", got)
	}
	if web.reached(tok) {
		t.Errorf("the client's progress token reached the closed upstream")
	}
}
