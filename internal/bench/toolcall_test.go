package bench

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
)

func TestToolCall(t *testing.T) {
	var ids []any
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		wantHeaders := map[string]string{
			"Content-Type":         "application/json",
			"Accept":               "application/json, text/event-stream",
			"Mcp-Protocol-Version": "2026-07-28",
			"Mcp-Method":           "tools/call",
			"Mcp-Name":             "echo",
		}
		for k, v := range wantHeaders {
			if got := r.Header.Get(k); got != v {
				t.Errorf("header %s = %q, want %q", k, got, v)
			}
		}
		b, _ := io.ReadAll(r.Body)
		var msg map[string]any
		if err := json.Unmarshal(b, &msg); err != nil {
			t.Fatalf("request body is not JSON: %v\n%s", err, b)
		}
		ids = append(ids, msg["id"])
		delete(msg, "id")
		want := map[string]any{
			"jsonrpc": "2.0",
			"method":  "tools/call",
			"params": map[string]any{
				"name":      "echo",
				"arguments": map[string]any{"message": "hi"},
				"_meta": map[string]any{
					"io.modelcontextprotocol/protocolVersion":    "2026-07-28",
					"io.modelcontextprotocol/clientInfo":         map[string]any{"name": "bench", "version": "1"},
					"io.modelcontextprotocol/clientCapabilities": map[string]any{},
				},
			},
		}
		if !reflect.DeepEqual(msg, want) {
			t.Errorf("request body = %v, want %v", msg, want)
		}
		switch r.URL.Path {
		case "/deny":
			io.WriteString(w, `{"jsonrpc":"2.0","id":1,"error":{"code":-32001,"message":"denied"}}`)
		case "/down":
			http.Error(w, "upstream down", http.StatusBadGateway)
		default:
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"Echo: hi"}]}}`)
		}
	}))
	defer srv.Close()

	call := &ToolCall{Client: NewClient(4), Tool: "echo", Arguments: `{"message":"hi"}`, Want: "Echo: hi"}
	tests := []struct {
		path    string
		wantErr string
	}{
		{"/ok", ""},
		{"/deny", `no "Echo: hi"`},
		{"/down", "502"},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			call.URL = srv.URL + tt.path
			err := call.Do(t.Context())
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("Do: %v, want no error", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("Do: got error %v, want one containing %q", err, tt.wantErr)
			}
		})
	}
	if want := []any{1.0, 2.0, 3.0}; !reflect.DeepEqual(ids, want) {
		t.Errorf("request ids = %v, want %v", ids, want)
	}
}
