package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"
)

// ProtocolVersion is the MCP revision ToolCall speaks: 2026-07-28, whose
// requests carry their own protocol version, client info and client
// capabilities in _meta, so a call needs no initialize handshake and no
// session. (mcp-go answers -32602 when clientCapabilities is missing.)
const ProtocolVersion = "2026-07-28"

// NewClient returns an HTTP client for a load generator: keep-alive
// connections, up to idle per host (at least the concurrency, or workers
// would keep opening new connections), and no proxy from the environment.
func NewClient(idle int) *http.Client {
	return &http.Client{Transport: &http.Transport{
		DialContext:         (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConns:        idle,
		MaxIdleConnsPerHost: idle,
		IdleConnTimeout:     90 * time.Second,
	}}
}

// ToolCall makes stateless MCP tools/call requests over Streamable HTTP.
// Set the fields before the first Do and leave them alone afterwards; Do
// is safe for concurrent use.
type ToolCall struct {
	// Client sends the requests. Nil means http.DefaultClient.
	Client *http.Client
	// URL is the MCP endpoint.
	URL string
	// Tool is the tool's name.
	Tool string
	// Arguments is the JSON object of the tool's arguments. Empty means {}.
	Arguments string
	// Want must occur in the response body for the call to count as
	// successful. Empty means any 200 response does.
	Want string

	nextID atomic.Int64
}

// Do makes one call and checks the answer. It has the signature of Call.
func (c *ToolCall) Do(ctx context.Context) error {
	id := c.nextID.Add(1)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.URL, bytes.NewReader(c.body(id)))
	if err != nil {
		return err
	}
	h := req.Header
	h["Content-Type"] = []string{"application/json"}
	h["Accept"] = []string{"application/json, text/event-stream"}
	h["Mcp-Protocol-Version"] = []string{ProtocolVersion}
	h["Mcp-Method"] = []string{"tools/call"}
	h["Mcp-Name"] = []string{c.Tool}
	client := c.Client
	if client == nil {
		client = http.DefaultClient
	}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return fmt.Errorf("reading the response: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("status %s: %s", resp.Status, clip(body))
	}
	if c.Want != "" && !bytes.Contains(body, []byte(c.Want)) {
		return fmt.Errorf("response has no %q: %s", c.Want, clip(body))
	}
	return nil
}

// body renders the JSON-RPC request with the given id.
func (c *ToolCall) body(id int64) []byte {
	args := c.Arguments
	if args == "" {
		args = "{}"
	}
	name, _ := json.Marshal(c.Tool)
	b := make([]byte, 0, 256+len(args))
	b = append(b, `{"jsonrpc":"2.0","id":`...)
	b = strconv.AppendInt(b, id, 10)
	b = append(b, `,"method":"tools/call","params":{"name":`...)
	b = append(b, name...)
	b = append(b, `,"arguments":`...)
	b = append(b, args...)
	b = append(b, `,"_meta":{"io.modelcontextprotocol/protocolVersion":"`+ProtocolVersion+
		`","io.modelcontextprotocol/clientInfo":{"name":"bench","version":"1"}`+
		`,"io.modelcontextprotocol/clientCapabilities":{}}}}`...)
	return b
}

// clip shortens a response body for an error message.
func clip(b []byte) []byte {
	const n = 300
	if len(b) > n {
		return append(b[:n:n], "..."...)
	}
	return b
}
