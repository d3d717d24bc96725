package gateway

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/sluicehq/sluice/gateway/transport"
	"github.com/sluicehq/sluice/intercept"
)

// lister is an MCP server whose every tools/list names a fresh tool,
// fresh_N (N counts its lists), with a description and annotations, after
// many filler tools that make the list slow to read. tools/call answers
// any tool.
type lister struct {
	mu     sync.Mutex
	lists  int
	filler string
}

func newLister() *lister {
	var b strings.Builder
	for i := range 3000 {
		fmt.Fprintf(&b, `{"name":"filler_%d","description":"a filler tool that makes this list long enough to take a while to read","inputSchema":{"type":"object","properties":{"path":{"type":"string","description":"where"},"count":{"type":"integer","minimum":0}},"required":["path"]}},`, i)
	}
	return &lister{filler: b.String()}
}

// answer returns the response to one request, nil for anything else.
func (l *lister) answer(msg []byte) []byte {
	var req struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Params struct {
			ProtocolVersion string `json:"protocolVersion"`
		} `json:"params"`
	}
	if json.Unmarshal(msg, &req) != nil || req.ID == nil || req.Method == "" {
		return nil
	}
	var result string
	switch req.Method {
	case "initialize":
		result = `{"protocolVersion":"` + req.Params.ProtocolVersion + `","capabilities":{"tools":{}},"serverInfo":{"name":"lister","version":"1"}}`
	case "tools/list":
		l.mu.Lock()
		l.lists++
		n := l.lists
		l.mu.Unlock()
		result = fmt.Sprintf(`{"tools":[%s{"name":"fresh_%d","description":"fresh tool %d","annotations":{"readOnlyHint":true},"inputSchema":{"type":"object"}}]}`, l.filler, n, n)
	case "tools/call":
		result = `{"content":[{"type":"text","text":"called"}]}`
	default:
		result = `{}`
	}
	return []byte(`{"jsonrpc":"2.0","id":` + string(req.ID) + `,"result":` + result + `}`)
}

// ServeHTTP answers on Streamable HTTP: JSON bodies, or with sse one SSE
// event per answer.
func (l *lister) handler(sse bool) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			w.WriteHeader(http.StatusMethodNotAllowed)
			return
		}
		body, _ := io.ReadAll(r.Body)
		out := l.answer(body)
		if out == nil {
			w.WriteHeader(http.StatusAccepted)
			return
		}
		if strings.Contains(string(body), `"method":"initialize"`) {
			w.Header().Set("Mcp-Session-Id", "lister-session")
		}
		if sse {
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprintf(w, "event: message\ndata: %s\n\n", out)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write(out)
	})
}

// TestHelperListerStdio is the lister as a stdio server, run as a child
// process by TestToolsListRecordedFirst; on its own it does nothing.
func TestHelperListerStdio(t *testing.T) {
	if os.Getenv("SLUICE_TEST_LISTER_STDIO") != "1" {
		return
	}
	l := newLister()
	in := bufio.NewReaderSize(os.Stdin, 1<<20)
	for {
		line, err := in.ReadBytes('\n')
		if out := l.answer(line); out != nil {
			os.Stdout.Write(append(out, '\n'))
		}
		if err != nil {
			os.Exit(0) // before the test framework writes to stdout
		}
	}
}

// describing records the description and annotations of each tools/call's
// descriptor, and allows it.
type describing struct {
	mu   sync.Mutex
	seen map[string]string // upstream/tool -> description|annotations
}

func (d *describing) Decide(_ context.Context, a *intercept.ActionDescriptor) (intercept.Decision, error) {
	d.mu.Lock()
	d.seen[a.Upstream+"/"+a.ToolName] = a.ToolDescription + "|" + string(a.Annotations)
	d.mu.Unlock()
	return intercept.Decision{Verdict: intercept.Allow, Reason: "test"}, nil
}

func (d *describing) saw(key string) string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.seen[key]
}

// freshTool returns the name of the fresh tool in a tools/list answer
// (a JSON body or SSE events).
func freshTool(t *testing.T, body string) string {
	t.Helper()
	i := strings.Index(body, `"name":"fresh_`)
	if i < 0 {
		t.Fatalf("no fresh tool in the list: %.300s", body)
	}
	name, _, _ := strings.Cut(body[i+len(`"name":"`):], `"`)
	return name
}

// postFirst posts body and returns the first message of the answer as
// soon as it arrives: the JSON body, or the data of the first SSE event,
// without waiting for the stream to end, as a client acting on it would.
func postFirst(t *testing.T, url string, hdr map[string]string, body string) string {
	t.Helper()
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 16<<20)
	var data []string
	for sc.Scan() {
		line := sc.Text()
		if d, ok := strings.CutPrefix(line, "data:"); ok {
			data = append(data, strings.TrimPrefix(d, " "))
		} else if line == "" && len(data) > 0 {
			return strings.Join(data, "\n")
		}
	}
	t.Fatalf("no event in the answer to %.100s", body)
	return ""
}

// TestToolsListRecordedFirst: a client that calls a tool as soon as it has
// the tools/list naming it gets that call decided with the tool's
// description and annotations from the list. The gateway records a
// listing before it relays it (it used to record after, so the call could
// be classified without them) on every path a listing takes: /mcp
// relaying an HTTP upstream's JSON or SSE answer, the bridge of a 2025
// session to a stdio upstream, the shared stdio connection of 2026-07-28
// requests, and a relayed /ws connection.
func TestToolsListRecordedFirst(t *testing.T) {
	dec := &describing{seen: map[string]string{}}
	jsonUp := httptest.NewServer(newLister().handler(false))
	t.Cleanup(jsonUp.Close)
	sseUp := httptest.NewServer(newLister().handler(true))
	t.Cleanup(sseUp.Close)
	g, err := New(Options{Upstreams: []Upstream{
		{Name: "json", URL: jsonUp.URL},
		{Name: "sse", URL: sseUp.URL},
		{Name: "stdio", Command: os.Args[0], Args: []string{"-test.run=^TestHelperListerStdio$"}, Env: map[string]string{"SLUICE_TEST_LISTER_STDIO": "1"}},
	}}, &intercept.Interceptor{Decider: dec}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	gw := httptest.NewServer(g.Handler())
	t.Cleanup(func() { closeServed(t, gw, g) })

	check := func(t *testing.T, upstream, tool string) {
		t.Helper()
		want := "fresh tool " + strings.TrimPrefix(tool, "fresh_") + `|{"readOnlyHint":true}`
		if got := dec.saw(upstream + "/" + tool); got != want {
			t.Errorf("descriptor of %s/%s: got %q, want %q", upstream, tool, got, want)
		}
	}
	const rounds = 5
	modern := func(t *testing.T, upstream string) {
		url := gw.URL + "/mcp/" + upstream
		for id := range rounds {
			tool := freshTool(t, postFirst(t, url, modernHeaders("tools/list", ""), `{"jsonrpc":"2.0","id":`+itoa(2*id)+`,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"test","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}}}}`))
			if status, _, body := post(t, url, modernHeaders("tools/call", tool), modernCall(2*id+1, tool, `{}`)); status != 200 || !strings.Contains(body, "called") {
				t.Fatalf("call: got %d %s", status, body)
			}
			check(t, upstream, tool)
		}
	}
	session := func(t *testing.T, upstream string) {
		url := gw.URL + "/mcp/" + upstream
		hdr := map[string]string{"Mcp-Session-Id": initialize(t, url), "Mcp-Protocol-Version": "2025-11-25"}
		for id := 1; id <= rounds; id++ {
			tool := freshTool(t, postFirst(t, url, hdr, `{"jsonrpc":"2.0","id":`+itoa(2*id)+`,"method":"tools/list"}`))
			if status, _, body := post(t, url, hdr, `{"jsonrpc":"2.0","id":`+itoa(2*id+1)+`,"method":"tools/call","params":{"name":"`+tool+`","arguments":{}}}`); status != 200 || !strings.Contains(body, "called") {
				t.Fatalf("call: got %d %s", status, body)
			}
			check(t, upstream, tool)
		}
	}
	t.Run("mcp/2026-07-28/json", func(t *testing.T) { modern(t, "json") })
	t.Run("mcp/2026-07-28/stdio", func(t *testing.T) { modern(t, "stdio") })
	t.Run("mcp/2025-11-25/sse", func(t *testing.T) { session(t, "sse") })
	t.Run("mcp/2025-11-25/stdio", func(t *testing.T) { session(t, "stdio") })
	t.Run("ws/json", func(t *testing.T) {
		c := dialWith(t, &transport.WSDialer{URL: "ws" + strings.TrimPrefix(gw.URL, "http") + "/ws/json"})
		ctx := t.Context()
		roundTrip := func(msg string) string {
			t.Helper()
			if err := c.Write(ctx, []byte(msg)); err != nil {
				t.Fatal(err)
			}
			b, err := c.Read(ctx)
			if err != nil {
				t.Fatal(err)
			}
			return string(b)
		}
		roundTrip(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"ws","version":"1"}}}`)
		if err := c.Write(ctx, []byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)); err != nil {
			t.Fatal(err)
		}
		for id := 1; id <= rounds; id++ {
			tool := freshTool(t, roundTrip(`{"jsonrpc":"2.0","id":`+itoa(2*id)+`,"method":"tools/list"}`))
			if got := roundTrip(`{"jsonrpc":"2.0","id":` + itoa(2*id+1) + `,"method":"tools/call","params":{"name":"` + tool + `","arguments":{}}}`); !strings.Contains(got, "called") {
				t.Fatalf("call: got %s", got)
			}
			check(t, "json", tool)
		}
	})
}
