package main

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/sluicehq/sluice/audit"
	"github.com/sluicehq/sluice/examples/demo-server/demo"
	"github.com/sluicehq/sluice/intercept"
	"github.com/sluicehq/sluice/internal/fulldisk"
	"github.com/sluicehq/sluice/internal/govern"
	"github.com/sluicehq/sluice/telemetry"
)

// syncBuffer is a log destination safe for the store's writer goroutine.
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

// governed is the decision chain serve builds, driven directly.
type governed struct {
	gv   *governance
	logs *syncBuffer
	n    int
}

// govern builds the governance of the YAML config with data_dir dir and
// Prometheus metrics. It is closed at the test's end, or by close.
func governFor(t *testing.T, yaml, dir string) *governed {
	t.Helper()
	cfg, err := parseConfig("test", []byte(yaml))
	if err != nil {
		t.Fatal(err)
	}
	cfg.DataDir = dir
	cfg.Telemetry.Prometheus = true
	logs := &syncBuffer{}
	gv, err := buildGovernance(context.Background(), cfg, slog.New(slog.NewTextHandler(logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	g := &governed{gv: gv, logs: logs}
	t.Cleanup(g.close)
	return g
}

func (g *governed) close() {
	if g.gv != nil {
		g.gv.close(context.Background())
		g.gv = nil
	}
}

// call decides about a call to echo with a new id and reports whether it
// is forwarded, and the reply if not.
func (g *governed) call(t *testing.T) (id int, forward bool, reply string) {
	t.Helper()
	g.n++
	m, err := intercept.DecodeMessage(fmt.Appendf(nil, `{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"echo","arguments":{"message":"call-%d"}}}`, g.n, g.n))
	if err != nil {
		t.Fatal(err)
	}
	r, fwd := g.gv.ic.Check(context.Background(), m, intercept.CallContext{Upstream: "demo", Agent: "a", Target: "http://127.0.0.1:1/mcp"})
	return g.n, fwd, string(r)
}

// until calls until want says yes, for up to 10s.
func (g *governed) until(t *testing.T, what string, want func(forward bool, reply string) bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(2 * time.Millisecond) {
		if _, fwd, reply := g.call(t); want(fwd, reply) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not after 10s of calls; logs:\n%s", what, g.logs)
		}
	}
}

// metric returns the value of the Prometheus series name, -1 if absent.
func (g *governed) metric(t *testing.T, name string) float64 {
	t.Helper()
	rec := httptest.NewRecorder()
	g.gv.tp.MetricsHandler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	return seriesValue(t, rec.Body.String(), name)
}

// seriesValue is the value of the Prometheus series name (its first, of
// any labels) in body, a /metrics page; -1 if absent.
func seriesValue(t *testing.T, body, name string) float64 {
	t.Helper()
	m := regexp.MustCompile(`(?m)^` + name + `(?:\{[^}]*\})? (\S+)$`).FindStringSubmatch(body)
	if m == nil {
		return -1
	}
	v, err := strconv.ParseFloat(m[1], 64)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// waitLog waits until the logs hold want: the store reports a change of
// its health from its writer goroutine, just after the change itself.
func (g *governed) waitLog(t *testing.T, want, what string) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !strings.Contains(g.logs.String(), want); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no log of %s after 10s:\n%s", what, g.logs)
		}
	}
}

// waitMetric waits until the series satisfies ok.
func (g *governed) waitMetric(t *testing.T, name string, ok func(float64) bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		v := g.metric(t, name)
		if ok(v) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: got %v after 10s", name, v)
		}
	}
}

func refusedForAudit(fwd bool, reply string) bool {
	return !fwd && strings.Contains(reply, govern.ReasonAuditUnavailable)
}

func forwarded(fwd bool, _ string) bool { return fwd }

// TestAuditDenyWhileDiskFull: with audit.on_failure: deny, calls are
// refused with audit_unavailable once the disk is full, with an ERROR log
// and the metrics saying so, and allowed again as soon as space returns.
// On main every call went on and nothing was logged until shutdown.
func TestAuditDenyWhileDiskFull(t *testing.T) {
	disk := fulldisk.New(t)
	g := governFor(t, "policy: {default: allow}\naudit: {on_failure: deny}\n", disk.Dir)
	if _, fwd, reply := g.call(t); !fwd {
		t.Fatalf("before the disk is full: got %s, want the call forwarded", reply)
	}
	disk.Fill(t)
	g.until(t, "a call refused with audit_unavailable", func(fwd bool, reply string) bool {
		if !fwd && !strings.Contains(reply, govern.ReasonAuditUnavailable) {
			t.Fatalf("refused for another reason: %s", reply)
		}
		return !fwd
	})
	g.waitLog(t, `level=ERROR msg="audit: events cannot be written; calls are refused`, "the failing store")
	g.waitMetric(t, "sluice_audit_available", func(v float64) bool { return v == 0 })
	g.waitMetric(t, "sluice_audit_events_lost_total", func(v float64) bool { return v >= 1 })
	for range 3 {
		if _, fwd, reply := g.call(t); fwd {
			t.Fatalf("while the disk is full: a call was forwarded")
		} else if !refusedForAudit(fwd, reply) {
			t.Fatalf("while the disk is full: got %s, want audit_unavailable", reply)
		}
	}

	disk.Free(t)
	g.until(t, "a call forwarded after space returned", forwarded)
	g.waitLog(t, `msg="audit: events are written again"`, "the recovery")
	g.waitMetric(t, "sluice_audit_available", func(v float64) bool { return v == 1 })
}

// TestAuditWarnWhileDiskFull: by default (on_failure: warn) calls go on
// when the disk is full, but the loss is logged at ERROR and counted at
// once, not at shutdown.
func TestAuditWarnWhileDiskFull(t *testing.T) {
	disk := fulldisk.New(t)
	g := governFor(t, "policy: {default: allow}\n", disk.Dir)
	disk.Fill(t)
	for deadline := time.Now().Add(10 * time.Second); g.metric(t, "sluice_audit_events_lost_total") < 1; time.Sleep(2 * time.Millisecond) {
		if _, fwd, reply := g.call(t); !fwd {
			t.Fatalf("warn mode refused a call: %s", reply)
		}
		if time.Now().After(deadline) {
			t.Fatalf("sluice_audit_events_lost_total still 0 after 10s of calls on a full disk; logs:\n%s", g.logs)
		}
	}
	g.waitLog(t, `level=ERROR msg="audit: events cannot be written; calls go on unrecorded`, "the failing store")
	g.waitLog(t, `level=ERROR msg="audit: events lost" events=`, "the lost events")
	if v := g.metric(t, "sluice_audit_available"); v != 0 {
		t.Errorf("sluice_audit_available: got %v, want 0", v)
	}
}

// TestAuditCommitNoForwardWithoutEvent: with sync: commit and on_failure:
// deny, every call that was forwarded has its policy_enforced allow event
// in the database, exactly once, across the disk filling up and being
// freed: the event is durable before the call goes.
func TestAuditCommitNoForwardWithoutEvent(t *testing.T) {
	disk := fulldisk.New(t)
	g := governFor(t, "policy: {default: allow}\naudit: {on_failure: deny, sync: commit}\n", disk.Dir)
	fwd := map[string]bool{}
	call := func() (bool, string) {
		id, ok, reply := g.call(t)
		if ok {
			fwd[strconv.Itoa(id)] = true
		}
		return ok, reply
	}
	for range 20 {
		if ok, reply := call(); !ok {
			t.Fatalf("before the disk is full: %s", reply)
		}
	}
	disk.Fill(t)
	for deadline := time.Now().Add(10 * time.Second); ; {
		ok, reply := call()
		if !ok {
			if !strings.Contains(reply, "audit_unavailable") {
				t.Fatalf("refused for another reason: %s", reply)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no call refused after 10s on a full disk")
		}
	}
	for range 20 {
		if ok, _ := call(); ok {
			t.Fatal("a call was forwarded while the disk is full")
		}
	}
	disk.Free(t)
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(2 * time.Millisecond) {
		if ok, _ := call(); ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no call forwarded 10s after space returned; logs:\n%s", g.logs)
		}
	}
	for range 20 {
		if ok, reply := call(); !ok {
			t.Fatalf("after recovery: %s", reply)
		}
	}
	g.close()

	allowed := allowEvents(t, filepath.Join(disk.Dir, audit.FileName))
	for id := range fwd {
		if allowed[id] != 1 {
			t.Errorf("forwarded call %s: got %d allow events, want 1", id, allowed[id])
		}
	}
	for id := range allowed {
		if !fwd[id] {
			t.Errorf("call %s has an allow event but was not forwarded", id)
		}
	}
	t.Logf("%d calls forwarded, %d with their allow event, of %d", len(fwd), len(allowed), g.n)
}

// allowEvents counts the policy_enforced allow events in the database at
// path by call id.
func allowEvents(t *testing.T, path string) map[string]int {
	t.Helper()
	st, err := audit.Open(path, audit.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	evs, err := st.Query(context.Background(), audit.Filter{Decision: "allow"})
	if err != nil {
		t.Fatal(err)
	}
	n := map[string]int{}
	for _, e := range evs {
		if e.Type == telemetry.TypePolicyEnforced {
			n[fmt.Sprint(e.Attrs["call_id"])]++
		}
	}
	return n
}

// TestAuditVanishedDataDir removes data_dir under a running gateway in
// deny mode: calls are refused with audit_unavailable, with an ERROR log
// saying to restart. On main the events went into the deleted file.
func TestAuditVanishedDataDir(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	g := governFor(t, "policy: {default: allow}\naudit: {on_failure: deny}\n", dir)
	if _, fwd, reply := g.call(t); !fwd {
		t.Fatalf("before: %s", reply)
	}
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	g.until(t, "a call refused with audit_unavailable", refusedForAudit)
	g.waitLog(t, "removed or replaced while open; restart", "the vanished database")
	g.waitMetric(t, "sluice_audit_available", func(v float64) bool { return v == 0 })
}

func TestAuditFailureConfig(t *testing.T) {
	for _, tt := range []struct{ yaml, err string }{
		{"audit: {on_failure: deny, sync: commit}\n", ""},
		{"audit: {on_failure: warn, sync: linger}\n", ""},
		{"audit: {on_failure: stop}\n", "audit.on_failure"},
		{"audit: {sync: always}\n", "audit.sync"},
		{"audit: {off: true, on_failure: deny}\n", "audit.off"},
		{"audit: {off: true, sync: commit}\n", "audit.off"},
	} {
		_, err := parseConfig("test", []byte(tt.yaml))
		if tt.err == "" && err != nil || tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)) {
			t.Errorf("%s: got %v, want an error naming %q", tt.yaml, err, tt.err)
		}
	}
}

// TestKillUnderLoad runs the sluice binary in front of an upstream that
// notes when each call reaches it, fires calls from many clients at once,
// SIGKILLs the gateway mid-stream and compares the upstream's executions
// with the allow events in the database. With sync: commit none may be
// missing; by default (linger) only calls forwarded just before the kill
// may be: their events were still queued.
func TestKillUnderLoad(t *testing.T) {
	bin := buildSluice(t)
	for _, mode := range []string{auditLinger, auditCommit} {
		t.Run(mode, func(t *testing.T) {
			up := &executions{at: map[string]time.Time{}}
			srv := httptest.NewServer(up.count(demo.NewHTTPHandler(demo.NewServer(demo.Options{}), demo.HTTPOptions{})))
			defer srv.Close()
			dir := t.TempDir()
			cfgPath := filepath.Join(dir, "sluice.yaml")
			cfg := fmt.Sprintf("listen: 127.0.0.1:0\ndata_dir: %s\npolicy: {default: allow}\naudit: {sync: %s}\nupstreams: [{name: demo, url: %q}]\n",
				filepath.Join(dir, "data"), mode, srv.URL+"/mcp")
			if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
				t.Fatal(err)
			}
			c := startChild(t, bin, cfgPath, false)
			url := "http://" + c.listen + "/mcp/demo"

			const clients, killAt = 16, 400
			var next atomic.Int64
			var wg sync.WaitGroup
			start := time.Now()
			for range clients {
				wg.Go(func() {
					for {
						n := next.Add(1)
						if err := postCall(url, n); err != nil {
							return // the gateway is gone
						}
					}
				})
			}
			for deadline := time.Now().Add(15 * time.Second); up.len() < killAt; time.Sleep(time.Millisecond) {
				if time.Now().After(deadline) {
					t.Fatalf("%d calls executed after 15s, want %d", up.len(), killAt)
				}
			}
			if err := c.cmd.Process.Signal(syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			killed := time.Now()
			rate := float64(up.len()) / killed.Sub(start).Seconds()
			<-c.exited
			wg.Wait()

			allowed := allowEvents(t, filepath.Join(dir, "data", audit.FileName))
			up.mu.Lock()
			defer up.mu.Unlock()
			var missing []time.Duration // how long before the kill each was executed
			for id, at := range up.at {
				if allowed[id] == 0 {
					missing = append(missing, killed.Sub(at))
				}
			}
			slices.Sort(missing)
			var oldest time.Duration
			if len(missing) > 0 {
				oldest = missing[len(missing)-1]
			}
			t.Logf("sync %s: %d calls executed (%.0f/s), %d allow events, %d executed without one, the oldest %v before the kill",
				mode, len(up.at), rate, len(allowed), len(missing), oldest)
			switch mode {
			case auditCommit:
				if len(missing) > 0 {
					t.Errorf("sync: commit: %d executed calls have no event, want none", len(missing))
				}
			case auditLinger:
				// The linger is 50 ms; give a loaded, shared machine room
				// for the commit in progress.
				const window = time.Second
				if oldest > window {
					t.Errorf("sync: linger: a call executed %v before the kill has no event, want at most %v", oldest, window)
				}
			}
		})
	}
}

// executions notes when each call (by its message, call-N) reached the
// upstream.
type executions struct {
	mu sync.Mutex
	at map[string]time.Time // by call id N
}

func (e *executions) len() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.at)
}

func (e *executions) count(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var m struct {
			Method string `json:"method"`
			Params struct {
				Arguments struct {
					Message string `json:"message"`
				} `json:"arguments"`
			} `json:"params"`
		}
		if json.Unmarshal(body, &m) == nil && m.Method == "tools/call" {
			if id, ok := strings.CutPrefix(m.Params.Arguments.Message, "call-"); ok {
				e.mu.Lock()
				e.at[id] = time.Now()
				e.mu.Unlock()
			}
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		next.ServeHTTP(w, r)
	})
}

// postCall sends one stateless (2026-07-28) call to echo with id n and
// message call-n, and reads the answer.
func postCall(url string, n int64) error {
	body := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"echo","arguments":{"message":"call-%d"},`+
		`"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"load","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}}}}`, n, n)
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", "2026-07-28")
	req.Header.Set("Mcp-Method", "tools/call")
	req.Header.Set("Mcp-Name", "echo")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	_, err = io.Copy(io.Discard, resp.Body)
	return err
}

// TestAuditLockedQueueFullCallsGoOn: with the event database locked by
// another process (a sqlite3 shell in a transaction) the writer is stuck
// and its queue of 10,000 events fills; then each call waited for room,
// a whole busy timeout (10 s) per batch of a thousand, so a locked
// database (or a disk that stalls, for ever) held every call, under
// on_failure: warn (which promises calls go on unrecorded) and deny (whose
// refusals are recorded too) alike. A failing store's full queue now
// turns the event away at once, counted lost.
func TestAuditLockedQueueFullCallsGoOn(t *testing.T) {
	for _, mode := range []string{"warn", "deny"} {
		t.Run(mode, func(t *testing.T) {
			dir := t.TempDir()
			g := governFor(t, "policy: {default: allow}\naudit: {on_failure: "+mode+"}\n", dir)
			if _, fwd, reply := g.call(t); !fwd {
				t.Fatalf("before the lock: got %s, want the call forwarded", reply)
			}
			lockEvents(t, dir)
			start := time.Now()
			for n := 0; n < 15_000; n++ {
				t0 := time.Now()
				_, fwd, reply := g.call(t)
				if took := time.Since(t0); took > 2*time.Second {
					t.Fatalf("call %d took %s with the event database locked, want no wait for the writer", n, took.Round(time.Millisecond))
				}
				if mode == "warn" && !fwd {
					t.Fatalf("call %d: got %s, want it forwarded (on_failure: warn)", n, reply)
				}
			}
			t.Logf("15,000 calls in %s", time.Since(start).Round(time.Millisecond))
			g.waitMetric(t, "sluice_audit_events_lost_total", func(v float64) bool { return v >= 1 })
		})
	}
}

// lockEvents holds the write lock of dir's event database, as another
// process in a transaction would, until the test ends.
func lockEvents(t *testing.T, dir string) {
	t.Helper()
	ctx := context.Background()
	db, err := sql.Open("sqlite", "file:"+filepath.Join(dir, audit.FileName)+"?_pragma=busy_timeout(10000)")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	lock, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := lock.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
		lock.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = lock.ExecContext(ctx, "ROLLBACK")
		lock.Close()
	})
}
