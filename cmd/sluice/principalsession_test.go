package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

// upstreamLog records the bodies of the POSTs an upstream receives.
type upstreamLog struct {
	mu     sync.Mutex
	bodies []string
}

func (l *upstreamLog) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			b, _ := io.ReadAll(r.Body)
			r.Body = io.NopCloser(bytes.NewReader(b))
			l.mu.Lock()
			l.bodies = append(l.bodies, string(b))
			l.mu.Unlock()
		}
		h.ServeHTTP(w, r)
	})
}

func (l *upstreamLog) saw(s string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, b := range l.bodies {
		if strings.Contains(b, s) {
			return true
		}
	}
	return false
}

// authedRequest sends method to url with key as bearer token ("" for
// none) and extra headers, and returns the status and body.
func authedRequest(t *testing.T, method, url, key, body string, hdr map[string]string) (int, http.Header, string) {
	t.Helper()
	req, _ := http.NewRequest(method, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	// A bounded wait: a GET that opens a stream (which it must not, on
	// another's session) would otherwise never end.
	resp, err := (&http.Client{Timeout: 5 * time.Second}).Do(req)
	if err != nil {
		return 0, nil, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, string(b)
}

const initializeBody = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"desk","version":"1"}}}`

func stolenCall(id int, query string) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"web_search","arguments":{"query":%q}}}`, id, query)
}

// A session or connection belongs to the principal that opened it: with
// API keys, mallory presenting alice's session (the Mcp-Session-Id on
// /mcp, the sessionId in an /sse message URL) gets 404 and nothing
// reaches the upstream, with no credentials at all 401; alice's session
// works on afterwards. On /ws, /sse and /mcp a client renaming itself
// mid-session stays the principal, so the route rule after alice's
// sensitive read still holds.
func TestSessionOfAnotherPrincipal(t *testing.T) {
	keyFile, alice, mallory := aliceAndMallory(t)
	up := &upstreamLog{}
	r := startServeWith(t, evasionPolicy+"auth: {mode: api_key, api_keys: {file: "+keyFile+"}}\n", up.wrap)
	base := strings.TrimSuffix(r.url, "/mcp/demo")

	t.Run("mcp", func(t *testing.T) {
		status, h, body := authedRequest(t, http.MethodPost, r.url, alice, initializeBody, nil)
		sid := h.Get("Mcp-Session-Id")
		if status != 200 || sid == "" {
			t.Fatalf("alice's initialize: got %d %s", status, body)
		}
		sess := map[string]string{"Mcp-Session-Id": sid, "Mcp-Protocol-Version": "2025-06-18"}
		authedRequest(t, http.MethodPost, r.url, alice, `{"jsonrpc":"2.0","method":"notifications/initialized"}`, sess)
		if status, _, body := authedRequest(t, http.MethodPost, r.url, mallory, stolenCall(2, "mcp-stolen"), sess); status != 404 {
			t.Errorf("mallory's POST on alice's session: got %d %s, want 404", status, body)
		}
		for _, m := range []string{http.MethodGet, http.MethodDelete} {
			if status, _, body := authedRequest(t, m, r.url, mallory, "", sess); status != 404 {
				t.Errorf("mallory's %s on alice's session: got %d %s, want 404", m, status, body)
			}
		}
		if status, _, body := authedRequest(t, http.MethodPost, r.url, "", stolenCall(3, "mcp-anonymous"), sess); status != 401 {
			t.Errorf("a POST without credentials on alice's session: got %d %s, want 401", status, body)
		}
		if up.saw("mcp-stolen") || up.saw("mcp-anonymous") {
			t.Error("a call on a stolen session reached the upstream")
		}
		authedRequest(t, http.MethodPost, r.url, alice, `{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"read_document","arguments":`+readSalaries+`}}`, sess)
		renamed := `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"web_search","arguments":` + search +
			`,"_meta":{"io.modelcontextprotocol/clientInfo":{"name":"someone-else","version":"1"}}}}`
		if status, _, body := authedRequest(t, http.MethodPost, r.url, alice, renamed, sess); status != 200 || !denied(body) {
			t.Errorf("alice's search under another client name after her sensitive read: got %d %s, want the no-exfil deny", status, body)
		}
	})

	t.Run("sse", func(t *testing.T) {
		req, _ := http.NewRequest(http.MethodGet, base+"/sse/demo", nil)
		req.Header.Set("Authorization", "Bearer "+alice)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { resp.Body.Close() })
		events := sseEvents(resp.Body)
		next := func() string {
			select {
			case e := <-events:
				return e
			case <-time.After(10 * time.Second):
				t.Fatal("no event on alice's stream")
				return ""
			}
		}
		endpoint := next()
		if !strings.Contains(endpoint, "sessionId=") {
			t.Fatalf("first event: got %q, want the endpoint", endpoint)
		}
		msgURL := base + endpoint
		post := func(key, body string) (int, string) {
			status, _, b := authedRequest(t, http.MethodPost, msgURL, key, body, nil)
			return status, b
		}
		if status, b := post(alice, initializeBody); status != 202 {
			t.Fatalf("alice's initialize: got %d %s", status, b)
		}
		next()
		post(alice, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
		if status, b := post(mallory, stolenCall(2, "sse-stolen")); status != 404 {
			t.Errorf("mallory's POST to alice's message URL: got %d %s, want 404", status, b)
		}
		if status, b := post("", stolenCall(3, "sse-anonymous")); status != 401 {
			t.Errorf("a POST without credentials to alice's message URL: got %d %s, want 401", status, b)
		}
		if status, b := post(alice, `{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"read_document","arguments":`+readSalaries+`}}`); status != 202 {
			t.Fatalf("alice's read: got %d %s", status, b)
		}
		if got := next(); !strings.Contains(got, "salary") {
			t.Fatalf("alice's read: got %s", got)
		}
		post(alice, `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"web_search","arguments":`+search+
			`,"_meta":{"io.modelcontextprotocol/clientInfo":{"name":"someone-else","version":"1"}}}}`)
		if got := next(); !denied(got) {
			t.Errorf("alice's search under another client name: got %s, want the no-exfil deny", got)
		}
		if up.saw("sse-stolen") || up.saw("sse-anonymous") {
			t.Error("a message posted to another principal's session reached the upstream")
		}
	})

	t.Run("ws", func(t *testing.T) {
		h := http.Header{"Authorization": {"Bearer " + alice}}
		ws, _, err := (&websocket.Dialer{Subprotocols: []string{"mcp"}}).Dial("ws"+strings.TrimPrefix(base, "http")+"/ws/demo", h)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { ws.Close() })
		rpc := func(msg string) string {
			if err := ws.WriteMessage(websocket.TextMessage, []byte(msg)); err != nil {
				t.Fatal(err)
			}
			ws.SetReadDeadline(time.Now().Add(10 * time.Second))
			_, b, err := ws.ReadMessage()
			if err != nil {
				t.Fatal(err)
			}
			return string(b)
		}
		rpc(initializeBody)
		ws.WriteMessage(websocket.TextMessage, []byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`))
		if got := rpc(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"read_document","arguments":` + readSalaries + `}}`); !strings.Contains(got, "salary") {
			t.Fatalf("alice's read: got %s", got)
		}
		got := rpc(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"web_search","arguments":` + search +
			`,"_meta":{"io.modelcontextprotocol/clientInfo":{"name":"mallory","version":"1"}}}}`)
		if !denied(got) {
			t.Errorf("alice's search naming herself mallory mid-connection: got %s, want the no-exfil deny", got)
		}
		// Without credentials the upgrade itself is refused.
		_, resp, err := (&websocket.Dialer{Subprotocols: []string{"mcp"}}).Dial("ws"+strings.TrimPrefix(base, "http")+"/ws/demo", nil)
		if err == nil || resp == nil || resp.StatusCode != 401 {
			t.Errorf("a WebSocket upgrade without credentials: got %v %v, want 401", resp, err)
		}
	})
}

// sseEvents returns the data of each event read from body, in order.
func sseEvents(body io.Reader) <-chan string {
	out := make(chan string, 16)
	go func() {
		defer close(out)
		sc := bufio.NewScanner(body)
		sc.Buffer(nil, 1<<20)
		var data []string
		for sc.Scan() {
			line := sc.Text()
			switch {
			case strings.HasPrefix(line, "data:"):
				data = append(data, strings.TrimSpace(strings.TrimPrefix(line, "data:")))
			case line == "" && len(data) > 0:
				out <- strings.Join(data, "\n")
				data = nil
			}
		}
	}()
	return out
}
