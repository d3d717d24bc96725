package gateway

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/go-json-experiment/json"
)

// TestStatelessReadingClientLosesProgress: the stateless bridge's
// reader now drops a notification whenever the client's 16-message
// channel is full, even for a client that reads; an upstream on stdio
// writes its progress faster than the gateway flushes events, so a
// healthy 2026-07-28 client loses most of its call's progress.
func TestStatelessReadingClientLosesProgress(t *testing.T) {
	const n = 500
	up := &scriptUpstream{handle: func(msg []byte) [][]byte {
		var r reqView
		if json.Unmarshal(msg, &r) != nil || r.Method == "" || len(r.ID) == 0 {
			return nil
		}
		var out [][]byte
		if len(r.Params.Meta.ProgressToken) > 0 {
			for i := range n {
				out = append(out, []byte(fmt.Sprintf(`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":%s,"progress":%d,"total":%d}}`, r.Params.Meta.ProgressToken, i, n)))
			}
		}
		return append(out, []byte(`{"jsonrpc":"2.0","id":`+string(r.ID)+`,"result":{"content":[{"type":"text","text":"ok"}]}}`))
	}}
	base := startScripted(t, up)
	body := strings.Replace(modernCall(1, "echo", `{}`), `"_meta":{`, `"_meta":{"progressToken":"mine",`, 1)
	req, _ := http.NewRequest(http.MethodPost, base+"/mcp/u", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range modernHeaders("tools/call", "echo") {
		req.Header.Set(k, v)
	}
	resp, err := (&http.Client{Timeout: 30 * time.Second}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	got := strings.Count(string(b), `notifications/progress`)
	if !strings.Contains(string(b), `"ok"`) {
		t.Fatalf("no answer: %.300s", b)
	}
	if got != n {
		t.Errorf("a client reading its stream got %d of the %d progress notifications its call's upstream sent", got, n)
	}
}
