package bench

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
)

// A2ASend makes A2A v1.0 SendMessage requests over JSON-RPC. Set the
// fields before the first Do; Do is safe for concurrent use.
type A2ASend struct {
	Client *http.Client
	// URL is the agent's JSON-RPC endpoint.
	URL string
	// Text is the message's one text part.
	Text string
	// Want must occur in the response body.
	Want string

	nextID atomic.Int64
}

// Do sends one message and checks the answer. It has the signature of Call.
func (c *A2ASend) Do(ctx context.Context) error {
	id := strconv.FormatInt(c.nextID.Add(1), 10)
	body := `{"jsonrpc":"2.0","id":` + id + `,"method":"SendMessage","params":{"message":{"messageId":"m` + id +
		`","role":"ROLE_USER","parts":[{"text":` + strconv.Quote(c.Text) + `}]}}}`
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.URL, strings.NewReader(body))
	if err != nil {
		return err
	}
	req.Header["Content-Type"] = []string{"application/json"}
	req.Header["A2A-Version"] = []string{"1.0"}
	client := c.Client
	if client == nil {
		client = http.DefaultClient
	}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return fmt.Errorf("reading the response: %w", err)
	}
	if resp.StatusCode != http.StatusOK || !bytes.Contains(b, []byte(c.Want)) {
		return fmt.Errorf("status %s: %s", resp.Status, clip(b))
	}
	return nil
}

// A2AAgent is a minimal A2A v1.0 agent for load tests: its card at
// /.well-known/agent-card.json names base+"/rpc", and every SendMessage
// is answered with a completed task echoing the request's id.
func A2AAgent(base string) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /.well-known/agent-card.json", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"name":"bench","description":"Echo agent for sluice bench.","version":"1","supportedInterfaces":[{"url":%q,"protocolBinding":"JSONRPC","protocolVersion":"1.0"}],"capabilities":{},"defaultInputModes":["text"],"defaultOutputModes":["text"],"skills":[]}`, base+"/rpc")
	})
	mux.HandleFunc("POST /rpc", func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		id := "null"
		if i := bytes.Index(b, []byte(`"id":`)); i >= 0 {
			rest := b[i+5:]
			if j := bytes.IndexAny(rest, ",}"); j > 0 {
				id = string(rest[:j])
			}
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"task":{"id":"t%s","contextId":"c","status":{"state":"TASK_STATE_COMPLETED"},"artifacts":[{"artifactId":"a","parts":[{"text":"echo: hi"}]}]}}}`, id, strings.Trim(id, `"`))
	})
	return mux
}
