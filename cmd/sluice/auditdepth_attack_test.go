package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/audit"
	"github.com/sluicehq/sluice/internal/bench"
)

// TestAttackA2ADeepExtraBreaksEventQueries (attacker review): with
// audit.keep_arguments, an A2A message's members the arguments do not
// read are kept under extra.params (or extra.envelope), four levels
// deeper in the stored event than in the request. A member nested 9996
// deep was taken, decided and recorded, and its event, 10001 levels deep,
// was one no reader decodes (encoding/json stops at 10000): every query
// reading its block failed, so `sluice events query`, the console, replay
// and the recommendation engine lost the agent's calls and everyone
// else's around them.
func TestAttackA2ADeepExtraBreaksEventQueries(t *testing.T) {
	aln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	abase := "http://" + aln.Addr().String()
	agent := &http.Server{Handler: bench.A2AAgent(abase)}
	go agent.Serve(aln)
	t.Cleanup(func() { agent.Close() })

	agents, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	base := "http://" + agents.Addr().String()
	g := startServeOn(t, agents, fmt.Sprintf(`policy: {default: allow, result_mode: tool_result}
upstreams: [{name: demo, url: "http://127.0.0.1:1/mcp"}]
agents: [{name: research, url: %s}]
audit: {keep_arguments: true}
`, abase), nil)

	const depth = 9996
	deep := strings.Repeat("[", depth) + strings.Repeat("]", depth)
	body := `{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"x":` + deep +
		`,"message":{"kind":"message","messageId":"m","role":"user","parts":[{"kind":"text","text":"hi"}]}}}`
	req, _ := http.NewRequest(http.MethodPost, base+"/a2a/research", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	answer, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err := g.stop(); err != nil {
		t.Fatal(err)
	}

	db := filepath.Join(g.dir, audit.FileName)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var out bytes.Buffer
	if err := runEvents(ctx, []string{"query", "--db", db, "--limit", "100", "--json"}, &out); err != nil {
		t.Fatalf("events query after a message with a member %d deep (answered %d %.200s): %v", depth, resp.StatusCode, answer, err)
	}
	if !strings.Contains(out.String(), `"upstream":"a2a:research"`) {
		t.Errorf("events query: the message's policy_enforced event is missing:\n%.2000s", out.String())
	}
}
