package gateway

import (
	"bufio"
	"context"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestLastEventIDResumption breaks a streamed call after its first event
// and resumes through the gateway with Last-Event-ID: the upstream replays
// what came after, ending with the call's answer. (mcp-go cancels a call
// whose POST went away, so the answer is its cancellation error; a direct
// connection sees the same.)
func TestLastEventIDResumption(t *testing.T) {
	f := newFixture(t, allowEcho, Options{})
	url := f.gw.URL + "/mcp/demo"
	sid := initialize(t, url)
	resp, cancel := startSlowCount(t, url, sid, 7, 3, 150)
	rd := bufio.NewReader(resp.Body)
	var lastID string
	for lastID == "" {
		line, err := rd.ReadString('\n')
		if err != nil {
			t.Fatalf("no event id before the stream ended: %v", err)
		}
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "id:"); ok {
			lastID = strings.TrimSpace(v)
		}
	}
	cancel()
	resp.Body.Close()

	get, _ := http.NewRequest(http.MethodGet, url, nil)
	get.Header.Set("Accept", "text/event-stream")
	get.Header.Set("Mcp-Session-Id", sid)
	get.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	get.Header.Set("Last-Event-ID", lastID)
	gctx, gcancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer gcancel()
	resp, err := http.DefaultClient.Do(get.WithContext(gctx))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("resume: got %d, want 200", resp.StatusCode)
	}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if line := sc.Text(); strings.HasPrefix(line, "data:") && strings.Contains(line, `"id":7`) {
			return
		}
	}
	t.Fatalf("resumed stream ended without the call's answer: %v", sc.Err())
}
