package gateway

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluicehq/sluice/intercept"
)

// stderrRecords are the records of logs (JSON lines) about the stderr of
// the upstream kid: the lines logged, and the lines the records of
// dropped lines count.
func stderrRecords(t *testing.T, logs string) (lines []string, dropped int64) {
	t.Helper()
	for _, l := range strings.Split(strings.TrimSpace(logs), "\n") {
		var rec struct {
			Msg, Upstream, Line string
			Dropped             int64
		}
		if err := json.Unmarshal([]byte(l), &rec); err != nil {
			t.Fatalf("record %q: %v", l, err)
		}
		if rec.Upstream != "kid" || !strings.HasPrefix(rec.Msg, "stdio upstream stderr") {
			continue
		}
		if rec.Dropped > 0 {
			dropped += rec.Dropped
		} else {
			lines = append(lines, rec.Line)
		}
	}
	return lines, dropped
}

// TestAttackStdioStderrSecretsLogged: a stdio server's stderr lines were
// logged as they were, unlike every other text the gateway records: a
// server that logs the requests it makes (or an agent steering one to
// print its arguments) put bearer tokens and passwords into the
// gateway's log. Each line is scrubbed as recorded text is.
func TestAttackStdioStderrSecretsLogged(t *testing.T) {
	bin := buildDemoServer(t)
	script := `echo 'GET https://api.example.com/v1 Authorization: Bearer Zt9xQ2mVb7LpR4sK8wYcStderr' >&2
echo 'login db --password hunter2-stderr-secret' >&2
echo '{"client_secret":"s3cr3t-from-stderr-json"}' >&2
exec "$0" -transport stdio`
	var logs logBuffer
	g, err := New(Options{Upstreams: []Upstream{{Name: "kid", Command: "sh", Args: []string{"-c", script, bin}}}},
		&intercept.Interceptor{Decider: allowEcho}, slog.New(slog.NewJSONHandler(&logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	gw := httptest.NewServer(g.Handler())
	t.Cleanup(func() { closeServed(t, gw, g); http.DefaultClient.CloseIdleConnections() })
	if _, _, body := post(t, gw.URL+"/mcp/kid", modernHeaders("tools/call", "echo"), modernCall(1, "echo", `{"message":"hi"}`)); !strings.Contains(body, "hi") {
		t.Fatalf("echo through the stdio upstream: %s", body)
	}
	g.Close()

	lines, _ := stderrRecords(t, logs.String())
	if len(lines) != 3 {
		t.Fatalf("stderr lines logged: %d, want 3:\n%s", len(lines), logs.String())
	}
	for _, secret := range []string{"Zt9xQ2mVb7LpR4sK8wYcStderr", "hunter2-stderr-secret", "s3cr3t-from-stderr-json"} {
		if strings.Contains(logs.String(), secret) {
			t.Errorf("the gateway's log holds %q from the upstream's stderr:\n%s", secret, logs.String())
		}
	}
	if !strings.HasPrefix(lines[0], "GET https://api.example.com/v1 Authorization: [REDACTED]") {
		t.Errorf("first line logged as %q, want the rest of it kept", lines[0])
	}
}

// gatedLog is a log sink that holds every record of a stdio upstream's
// stderr until open is closed, as a slow terminal or a stalled log
// shipper does; the gateway's other records go through.
type gatedLog struct {
	logBuffer
	open chan struct{}
	once sync.Once
}

func (g *gatedLog) Write(p []byte) (int, error) {
	if strings.Contains(string(p), `"msg":"stdio upstream stderr"`) {
		<-g.open
	}
	return g.logBuffer.Write(p)
}

func (g *gatedLog) release() { g.once.Do(func() { close(g.open) }) }

// TestAttackStdioStderrFlood: each line a stdio server wrote to stderr
// was logged, at any rate, and read only as fast as the log took it: a
// server writing lines in a loop flooded the gateway's log, and once the
// log's sink was slow the child blocked on its stderr, its pipe full,
// and stopped answering. Lines are logged at a bounded rate, the child's
// stderr read whatever the log does, and the lines not logged counted
// in a record: every line written is logged or counted.
func TestAttackStdioStderrFlood(t *testing.T) {
	const flood = 20000
	bin := buildDemoServer(t)
	script := `i=0; while [ $i -lt 20000 ]; do echo "flood line $i, some padding to fill the pipe sooner" >&2; i=$((i+1)); done
exec "$0" -transport stdio`
	logs := &gatedLog{open: make(chan struct{})}
	g, err := New(Options{Upstreams: []Upstream{{Name: "kid", Command: "sh", Args: []string{"-c", script, bin}}}},
		&intercept.Interceptor{Decider: allowEcho}, slog.New(slog.NewJSONHandler(logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	gw := httptest.NewServer(g.Handler())
	t.Cleanup(func() { closeServed(t, gw, g); http.DefaultClient.CloseIdleConnections() })
	t.Cleanup(logs.release) // before closeServed: the log may hold up g.Close
	start := time.Now()

	// The child must get to serving with the log's sink stalled.
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	resp, err := sendPost(ctx, gw.URL+"/mcp/kid", modernHeaders("tools/call", "echo"), modernCall(1, "echo", `{"message":"alive"}`))
	if err != nil {
		t.Fatalf("the stdio upstream did not answer while its stderr's log was stalled: %v", err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(body), "alive") {
		t.Fatalf("echo through the stdio upstream: %s", body)
	}
	logs.release()
	closeServed(t, gw, g)
	elapsed := time.Since(start)

	lines, dropped := stderrRecords(t, logs.String())
	if most := stderrBurst + int(elapsed.Seconds()+1)*stderrPerSecond; len(lines) > most {
		t.Errorf("%d stderr lines logged in %v, want at most %d", len(lines), elapsed, most)
	}
	if got := int64(len(lines)) + dropped; got != flood || dropped == 0 {
		t.Errorf("%d lines logged and %d counted dropped, want the %d written accounted for", len(lines), dropped, flood)
	}
}
