package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/sluicehq/sluice/audit"
)

// TestLongToolNamesDoNotFloodTheRecord: an agent calls made-up tools
// whose names are as long as a request body allows (4 MiB each). Each
// call is denied and recorded, but with the name bounded (a prefix and a
// marker with the name's length and SHA-256): before, the events of 4
// such calls filled the 32 MiB the console's Agents page reads, so an
// ordinary agent's call made before them vanished from it, and `sluice
// events query` printed 4 MiB a line.
func TestLongToolNamesDoNotFloodTheRecord(t *testing.T) {
	g := startServe(t, "policy: {default: allow, result_mode: tool_result}\nadmin_token: t0k\n")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	alice, _ := mcpgoSession(t, g.url, "alice")
	if _, err := alice.CallTool(ctx, mcp.CallToolRequest{Params: mcp.CallToolParams{Name: "web_search", Arguments: map[string]any{"query": "sluice"}}}); err != nil {
		t.Fatal(err)
	}
	mallory, _ := mcpgoSession(t, g.url, "mallory")
	const calls = 10
	long := strings.Repeat("x", 4<<20-4<<10) // a request of it fits max_body_bytes
	var last string
	for i := range calls {
		last = fmt.Sprintf("made_up_%02d_", i) + long
		res, err := mallory.CallTool(ctx, mcp.CallToolRequest{Params: mcp.CallToolParams{Name: last}})
		if err != nil {
			t.Fatalf("call %d to a made-up tool: %v", i, err)
		}
		if !res.IsError {
			t.Fatalf("call %d to a made-up tool was not refused", i)
		}
		// The deny quotes the name bounded too: it quoted it whole five
		// times, a 20 MiB answer.
		if b, _ := json.Marshal(res); len(b) > 16<<10 {
			t.Fatalf("call %d: the deny is %d bytes, want at most 16 KiB", i, len(b))
		}
	}
	sum := sha256.Sum256([]byte(last))
	marker := fmt.Sprintf("[cut: %d bytes, sha256:%s]", len(last), hex.EncodeToString(sum[:]))

	c, at := consoleLogin(t, "http://"+g.admin, "ops")
	// The events are written behind the answers: wait for the last.
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		page := consoleGet(t, c, at("/console/feed"))
		if len(page) > 1<<20 {
			t.Fatalf("the feed is %d bytes", len(page))
		}
		if strings.Contains(page, marker) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the feed (%d bytes) does not show the newest name cut with %s", len(page), marker)
		}
	}
	if page := consoleGet(t, c, at("/console/agents")); !strings.Contains(page, "alice") || !strings.Contains(page, "mallory") {
		t.Errorf("the Agents page lost alice (or mallory) after %d calls with 4 MiB names (%d bytes):\n%.3000s", calls, len(page), page)
	}
	if err := g.stop(); err != nil {
		t.Fatal(err)
	}

	var out bytes.Buffer
	db := filepath.Join(g.dir, audit.FileName)
	if err := runEvents(context.Background(), []string{"query", "--db", db, "--limit", "100", "--json"}, &out); err != nil {
		t.Fatal(err)
	}
	got := out.String()
	if !strings.Contains(got, `"tool":"web_search"`) || !strings.Contains(got, marker) || len(got) > 1<<20 {
		t.Errorf("events query (%d bytes): want alice's web_search and the long names cut with %s", len(got), marker)
	}
	for _, line := range strings.Split(strings.TrimSpace(got), "\n") {
		if len(line) > 16<<10 {
			t.Errorf("events query printed a %d-byte event: %.300s…", len(line), line)
			break
		}
	}
}

// TestLongToolNameLogLineBounded: a denied call is logged at info with
// its tool name and agent, both the agent's to choose: a made-up tool
// name of 4 MiB wrote a 4 MiB line to the gateway's log per call. The
// gateway's logger (newLogger, text and json) bounds every string.
func TestLongToolNameLogLineBounded(t *testing.T) {
	for _, format := range []string{"text", "json"} {
		t.Run(format, func(t *testing.T) {
			var buf syncBuffer
			logger, err := newLogger(&buf, format, slog.LevelInfo)
			if err != nil {
				t.Fatal(err)
			}
			serveLogger = logger
			defer func() { serveLogger = nil }()
			g := startServe(t, "policy: {default: allow, result_mode: tool_result}\n")
			name := "made_up_" + strings.Repeat("x", 1<<20)
			agent := strings.Repeat("a", 64<<10)
			c, _ := mcpgoSession(t, g.url, agent)
			res, err := c.CallTool(context.Background(), mcp.CallToolRequest{Params: mcp.CallToolParams{Name: name}})
			if err == nil && !res.IsError {
				t.Fatal("the call to a made-up tool was not refused")
			}
			if err := g.stop(); err != nil {
				t.Fatal(err)
			}
			logged := buf.String()
			sum := sha256.Sum256([]byte(name))
			if !strings.Contains(logged, "decision") || !strings.Contains(logged, hex.EncodeToString(sum[:])) {
				t.Errorf("no decision line naming the tool by its SHA-256 in the log (%d bytes): %.500s", len(logged), logged)
			}
			for _, line := range strings.Split(logged, "\n") {
				if len(line) > 16<<10 {
					t.Errorf("a log line of %d bytes: %.300s…", len(line), line)
				}
			}
		})
	}
}
