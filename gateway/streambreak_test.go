package gateway

import (
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/go-json-experiment/json"

	"github.com/sluicehq/sluice/gateway/transport"
	"github.com/sluicehq/sluice/intercept"
)

// TestUpstreamStreamBreakAnswersPending has an HTTP upstream answer a POST
// with an event stream and die in the middle of it: each request it has
// not answered gets a JSON-RPC error naming the upstream before the
// client's stream ends; one it answered gets nothing more.
func TestUpstreamStreamBreakAnswersPending(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		// Progress, then the answer to id 1 only, then the connection dies
		// in the middle of an event.
		transport.WriteSSEMessage(w, []byte(`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"p","progress":1}}`))
		transport.WriteSSEMessage(w, []byte(`{"jsonrpc":"2.0","id":1,"result":{"content":[]}}`))
		w.Write([]byte("data: {\"jsonrpc\":"))
		w.(http.Flusher).Flush()
		conn, _, err := http.NewResponseController(w).Hijack()
		if err != nil {
			t.Errorf("hijack: %v", err)
			return
		}
		conn.Close()
	}))
	defer up.Close()
	g, err := New(Options{Upstreams: []Upstream{{Name: "u", URL: up.URL}}},
		&intercept.Interceptor{Decider: &intercept.StaticDecider{Allow: []string{"echo"}}}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	gw := httptest.NewServer(g.Handler())
	defer closeServed(t, gw, g)

	tests := []struct {
		name, version, body string
		failed              []string // ids that must get the upstream error
	}{
		{"single", "2025-06-18", `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo","arguments":{}}}`, []string{"7"}},
		{"batch", "2025-03-26", `[{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo"}},{"jsonrpc":"2.0","id":"b","method":"tools/call","params":{"name":"echo"}},{"jsonrpc":"2.0","id":3,"method":"ping"}]`, []string{"3", `"b"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, hdr, body := post(t, gw.URL+"/mcp/u", map[string]string{hdrVersion: tt.version}, tt.body)
			if status != http.StatusOK || !isEventStream(hdr) {
				t.Fatalf("got %d %s %q, want a 200 event stream", status, hdr.Get("Content-Type"), body)
			}
			rd := transport.NewSSEReader(strings.NewReader(body))
			var got []string
			for {
				ev, err := rd.Next()
				if err != nil {
					break
				}
				m, err := intercept.DecodeMessage(ev.Data)
				if err != nil {
					t.Fatalf("event %q: %v", ev.Data, err)
				}
				if m.Kind != intercept.KindError {
					continue
				}
				var e struct {
					Code    int    `json:"code"`
					Message string `json:"message"`
				}
				json.Unmarshal(m.Error, &e)
				if e.Code != intercept.CodeUpstreamError || !strings.Contains(e.Message, `"u"`) {
					t.Errorf("error for %s: got %d %q, want %d naming upstream u", m.ID, e.Code, e.Message, intercept.CodeUpstreamError)
				}
				got = append(got, string(m.ID))
			}
			slices.Sort(got)
			if slices.Sort(tt.failed); !slices.Equal(got, tt.failed) {
				t.Errorf("errors for ids %q, want %q", got, tt.failed)
			}
		})
	}
}
