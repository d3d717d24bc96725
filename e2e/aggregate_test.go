package e2e

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluicehq/sluice/examples/demo-server/demo"
	"github.com/sluicehq/sluice/gateway"
	"github.com/sluicehq/sluice/intercept"
)

// seenCalls records the upstream/tool policy saw for each call.
type seenCalls struct {
	mu   sync.Mutex
	seen []string
}

func (s *seenCalls) Decide(_ context.Context, d *intercept.ActionDescriptor) (intercept.Decision, error) {
	s.mu.Lock()
	s.seen = append(s.seen, d.Upstream+"/"+d.ToolName)
	s.mu.Unlock()
	if d.Upstream == "everything" && d.ToolName == "get-sum" {
		return intercept.Decision{Verdict: intercept.Deny, Reason: "tool_denied", PublicReason: "get-sum on everything is not allowed by policy", Mode: intercept.ModeToolResult}, nil
	}
	return intercept.Decision{Verdict: intercept.Allow, Reason: "allowed"}, nil
}

// TestAggregateEverythingFilesystemDemo puts server-everything,
// server-filesystem and the demo server behind one /mcp and drives it with
// the official TypeScript SDK client: everything and demo both offer
// "echo"; every name is valid; each call reaches the upstream that offers
// it, and policy sees that upstream and the tool's own name.
func TestAggregateEverythingFilesystemDemo(t *testing.T) {
	requireNode(t)
	wd, _ := os.Getwd()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "note.txt"), []byte("aggregated hello"), 0o644); err != nil {
		t.Fatal(err)
	}
	demoSrv := httptest.NewServer(demo.NewHTTPHandler(demo.NewServer(demo.Options{}), demo.HTTPOptions{}))
	t.Cleanup(demoSrv.Close)
	dec := &seenCalls{}
	g, err := gateway.New(gateway.Options{
		Upstreams: []gateway.Upstream{
			{Name: "everything", Command: "node", Args: []string{wd + "/serve.mjs", "stdio"}},
			{Name: "files", Command: "node", Args: []string{wd + "/node_modules/@modelcontextprotocol/server-filesystem/dist/index.js", dir}},
			{Name: "demo", URL: demoSrv.URL + "/mcp"},
		},
		VirtualServers: []gateway.VirtualServer{{}},
	}, &intercept.Interceptor{Decider: dec}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(g.Handler())
	t.Cleanup(func() { srv.Close(); g.Close() })

	calls, _ := json.Marshal([][]any{
		{"echo", map[string]any{"message": "from everything"}},
		{"demo_echo", map[string]any{"message": "from demo"}},
		{"read_text_file", map[string]any{"path": filepath.Join(dir, "note.txt")}},
		{"get-sum", map[string]any{"a": 1, "b": 2}},
		// server-everything asks the client while these run: the request
		// crosses the virtual server to the client and the answer back.
		{"trigger-sampling-request", map[string]any{"prompt": "aggregate"}},
		{"trigger-elicitation-request", map[string]any{}},
	})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", "aggregate-client.mjs", srv.URL+"/mcp", string(calls), "demo://resource/static/document/architecture.md")
	b, err := cmd.Output()
	if err != nil {
		t.Fatalf("client: %v\n%s", err, b)
	}
	var out struct {
		OK        bool     `json:"ok"`
		Error     string   `json:"error"`
		Tools     []string `json:"tools"`
		Prompts   []string `json:"prompts"`
		Resources []string `json:"resources"`
		Calls     []struct {
			Name  string `json:"name"`
			OK    bool   `json:"ok"`
			Text  string `json:"text"`
			Error string `json:"error"`
		} `json:"calls"`
		Read   map[string]any `json:"read"`
		Prompt map[string]any `json:"prompt"`
		Asked  []string       `json:"asked"`
	}
	if err := json.Unmarshal(b, &out); err != nil || !out.OK {
		t.Fatalf("client output %s (%v)", b, err)
	}
	valid := regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)
	seen := map[string]bool{}
	for _, n := range out.Tools {
		if !valid.MatchString(n) || seen[n] {
			t.Errorf("tool name %q invalid or repeated", n)
		}
		seen[n] = true
	}
	for _, want := range []string{"echo", "demo_echo", "read_text_file", "list_directory", "get-sum", "add"} {
		if !seen[want] {
			t.Errorf("tools %v: want %q", out.Tools, want)
		}
	}
	if len(out.Prompts) == 0 || len(out.Resources) == 0 {
		t.Errorf("prompts %v, resources %d: want everything's", out.Prompts, len(out.Resources))
	}
	if out.Prompt["ok"] != true {
		t.Errorf("prompts/get %v", out.Prompt)
	}
	want := []struct {
		ok   bool
		text string
	}{{true, "from everything"}, {true, "from demo"}, {true, "aggregated hello"}, {false, "not allowed"},
		{true, "sampled: Resource trigger-sampling-request context: aggregate"}, {true, "Ada"}}
	for i, w := range want {
		c := out.Calls[i]
		if c.OK != w.ok || !strings.Contains(c.Text+c.Error, w.text) {
			t.Errorf("call %s = %+v, want ok=%v and %q", c.Name, c, w.ok, w.text)
		}
	}
	dec.mu.Lock()
	got := slices.Clone(dec.seen)
	dec.mu.Unlock()
	// Resource reads and prompts are governed too, on the upstream that
	// has them, and so are the client's answers to its sampling and
	// elicitation requests, which carry data to it (mcp:response).
	if !slices.Equal(got, []string{"everything/echo", "demo/echo", "files/read_text_file", "everything/get-sum",
		"everything/trigger-sampling-request", "everything/mcp:response", "everything/trigger-elicitation-request", "everything/mcp:response", "everything/resource:demo://resource/static/document/architecture.md", "everything/prompt:" + out.Prompts[0]}) {
		t.Errorf("policy saw %v", got)
	}
	if out.Read["ok"] != true {
		t.Errorf("resources/read: %v", out.Read)
	}
	if !slices.Equal(out.Asked, []string{"sampling", "elicitation"}) {
		t.Errorf("the client was asked %v, want sampling then elicitation", out.Asked)
	}
}
