package gateway

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/intercept"
)

// lenientCalls reads a body the way a forgiving upstream would, with
// encoding/json v1 (case-insensitive keys, last duplicate wins), and
// returns the names of the tools/call requests it finds.
func lenientCalls(body []byte) []string {
	var one struct {
		Method string
		Params struct{ Name string }
	}
	var names []string
	if json.Unmarshal(body, &one) == nil && one.Method == "tools/call" {
		names = append(names, one.Params.Name)
	}
	var many []json.RawMessage
	if json.Unmarshal(body, &many) == nil {
		for _, m := range many {
			names = append(names, lenientCalls(m)...)
		}
	}
	return names
}

// FuzzNoCallWithoutDecision checks the gateway's central invariant: no
// tools/call reaches an upstream unless the decision point allowed that
// very tool, however the body is written.
func FuzzNoCallWithoutDecision(f *testing.F) {
	seeds := []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"message":"hi"}}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","name":"send_email"}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","Name":"send_email"}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/list","Method":"tools/call","params":{"name":"send_email"}}`,
		`[{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"send_email"}}]`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"send_email"}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"ech\u006f"}}`,
	}
	for _, s := range seeds {
		f.Add([]byte(s), "")
		f.Add([]byte(s), "2025-03-26")
	}
	var leaked []string
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		for _, name := range lenientCalls(b) {
			if name != "echo" {
				leaked = append(leaked, name+" in "+string(b))
			}
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"jsonrpc":"2.0","id":1,"result":{}}`)
	}))
	defer up.Close()
	g, err := New(Options{Upstreams: []Upstream{{Name: "u", URL: up.URL}}},
		&intercept.Interceptor{Decider: &intercept.StaticDecider{Allow: []string{"echo"}}}, nil)
	if err != nil {
		f.Fatal(err)
	}
	defer g.Close()
	h := g.Handler()
	f.Fuzz(func(t *testing.T, body []byte, version string) {
		leaked = leaked[:0]
		req := httptest.NewRequest(http.MethodPost, "http://127.0.0.1/mcp/u", bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		if version != "" && !strings.ContainsAny(version, "\r\n") {
			req.Header.Set("Mcp-Protocol-Version", version)
		}
		h.ServeHTTP(httptest.NewRecorder(), req)
		if len(leaked) > 0 {
			t.Fatalf("tools/call reached the upstream without an allow: %q", leaked)
		}
	})
}
