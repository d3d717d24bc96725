package gateway

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/sluicehq/sluice/examples/demo-server/demo"
	"github.com/sluicehq/sluice/intercept"
	"github.com/sluicehq/sluice/telemetry"
)

// syncBuffer is a bytes.Buffer safe for the gateway's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestAttackSessionIDRecorded: a sealed Mcp-Session-Id is a bearer
// credential that any replica serves until it expires. Whoever reads
// what the gateway records of a session (the policy's descriptor, which
// becomes audit events, approval records, policy memory and classifier
// requests; span attributes; log lines; the OnSessionEnd and
// OnIdentityRefused hooks, which feed the audit store) must not find the
// id there, and could take the session over if they did. Each records
// telemetry.SessionRef of the id instead, the same for every record of
// the session, on a route and on a virtual server (the client's outer
// id). Before, each recorded the id itself.
func TestAttackSessionIDRecorded(t *testing.T) {
	const echo = `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"echo","arguments":{"message":"hi"}}}`
	for _, tc := range []struct {
		name, path string
		virtual    []VirtualServer
	}{
		{"route", "/mcp/demo", nil},
		{"virtual server", "/mcp", []VirtualServer{{}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var mu sync.Mutex
			var recorded []string // every session the gateway told anyone of
			rec := func(kind, s string) {
				mu.Lock()
				defer mu.Unlock()
				recorded = append(recorded, kind+"="+s)
			}
			dec := intercept.DeciderFunc(func(ctx context.Context, d *intercept.ActionDescriptor) (intercept.Decision, error) {
				rec("descriptor", d.SessionID)
				return allowEcho.Decide(ctx, d)
			})
			exp := tracetest.NewInMemoryExporter()
			tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
			t.Cleanup(func() { tp.Shutdown(context.Background()) })
			var logs syncBuffer
			up := httptest.NewServer(demo.NewHTTPHandler(demo.NewServer(demo.Options{}), demo.HTTPOptions{}))
			t.Cleanup(up.Close)
			g, err := New(Options{Upstreams: []Upstream{{Name: "demo", URL: up.URL + "/mcp"}}, VirtualServers: tc.virtual,
				SessionKeys: [][]byte{key(1)}, Tracer: telemetry.NewTracer(tp),
				OnSessionEnd:      func(id string) { rec("ended", id) },
				OnIdentityRefused: func(ir IdentityRefusal) { rec("refused", ir.Session) },
			}, &intercept.Interceptor{Decider: dec}, slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug})))
			if err != nil {
				t.Fatal(err)
			}
			gw := httptest.NewServer(g.Handler())
			var closeOnce sync.Once
			t.Cleanup(func() { closeOnce.Do(func() { closeServed(t, gw, g) }) })
			u := gw.URL + tc.path

			hdr := openSession(t, u, "alice", nil)
			id := hdr[hdrSession]
			if status, _, body := post(t, u, hdr, echo); status != 200 || !strings.Contains(body, "Echo: hi") {
				t.Fatalf("the session's call: %d %s", status, body)
			}
			renamed := `{"jsonrpc":"2.0","id":4,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/clientInfo":{"name":"mallory","version":"1"}}}}`
			if status, _, body := post(t, u, hdr, renamed); status != 404 {
				t.Fatalf("the session presented as another client: %d %s, want 404", status, body)
			}
			if st := deleteSession(t, u, hdr); st/100 != 2 {
				t.Fatalf("DELETE: %d", st)
			}
			closeOnce.Do(func() { closeServed(t, gw, g) }) // every end told, every log line written
			tp.ForceFlush(context.Background())

			ref := telemetry.SessionRef(id)
			mu.Lock()
			got := strings.Join(recorded, "\n")
			mu.Unlock()
			kinds := []string{"descriptor", "ended"}
			if tc.virtual == nil {
				kinds = append(kinds, "refused") // a virtual server answers 404 before
			}
			for _, kind := range kinds {
				if !strings.Contains(got, kind+"="+ref+"\n") && !strings.HasSuffix(got, kind+"="+ref) {
					t.Errorf("no %s recorded the session's reference %s:\n%s", kind, ref, got)
				}
			}
			var spans strings.Builder
			sessionSpans := 0
			for _, s := range exp.GetSpans() {
				for _, a := range s.Attributes {
					fmt.Fprintf(&spans, "%s=%s\n", a.Key, a.Value.Emit())
					if string(a.Key) == telemetry.KeyMCPSessionID {
						sessionSpans++
						if a.Value.AsString() != ref {
							t.Errorf("span %s: %s = %.20s…, want %s", s.Name, a.Key, a.Value.AsString(), ref)
						}
					}
				}
			}
			if sessionSpans == 0 {
				t.Errorf("no span recorded the session:\n%s", spans.String())
			}
			for what, s := range map[string]string{"the hooks and descriptors": got, "the spans": spans.String(), "the log": logs.String()} {
				if strings.Contains(s, id) {
					t.Errorf("%s hold the session's id, a credential for it", what)
				}
			}
		})
	}
}
