package a2a

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// TestClientHeadersNotForwarded: the client's own HTTP headers never
// reach an A2A agent (the gateway writes the request's headers itself,
// A2A-Extensions only as decided with the message), so a route rule that
// closes the agent after a sensitive read has no header left to close.
// The MCP side needs it (gateway's headers.go); this keeps A2A so.
func TestClientHeadersNotForwarded(t *testing.T) {
	const mark = "SECRET-hr-salaries-7f3a"
	var mu sync.Mutex
	var seen []string
	var srv *httptest.Server
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		for k, vv := range r.Header {
			seen = append(seen, r.Method+" "+k+": "+strings.Join(vv, ","))
		}
		mu.Unlock()
		if r.Method == http.MethodGet {
			io.WriteString(w, strings.ReplaceAll(goodCard, "BASE", srv.URL))
			return
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"jsonrpc":"2.0","id":1,"result":{"kind":"task","id":"t1","contextId":"c1","status":{"state":"completed"}}}`)
	}))
	t.Cleanup(srv.Close)
	gw := serve(t, allow, srv.URL, Options{})
	for _, version := range []string{"", "1.0"} {
		method := "message/send"
		if version == "1.0" {
			method = "SendMessage"
		}
		req, _ := http.NewRequest(http.MethodPost, gw.URL+"/a2a/stub",
			strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"`+method+`","params":{"message":{"kind":"message","messageId":"m","role":"user","parts":[{"kind":"text","text":"hi"}]}}}`))
		req.Header.Set("Content-Type", "application/json")
		if version != "" {
			req.Header.Set("A2A-Version", version)
		}
		for _, k := range []string{"X-Leak", "Cookie", "Baggage", "Tracestate", "X-Forwarded-For"} {
			req.Header.Set(k, mark)
		}
		req.Header.Set("User-Agent", "agent/"+mark)
		req.Header.Set("Traceparent", "00-"+mark+"-00f067aa0ba902b7-01")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if !strings.Contains(string(b), `"result"`) {
			t.Fatalf("%s: got %s, want it answered", method, b)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(seen) == 0 {
		t.Fatal("the agent saw no request")
	}
	for _, s := range seen {
		if strings.Contains(s, mark) {
			t.Errorf("the agent got the client's header %q", s)
		}
	}
}
