package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/sluicehq/sluice/examples/demo-server/demo"
	"github.com/sluicehq/sluice/internal/fulldisk"
)

// TestServeDiskFull runs a real `sluice serve` and fills its disk (its
// file-size limit, fulldisk.Process) while calls flow, then frees it:
// what a user sees of each SQLite store in the data directory. The
// process must not die (Go ignores SIGXFSZ), hang a call or spin, and it
// must recover without a restart.
func TestServeDiskFull(t *testing.T) {
	bin := buildSluice(t)
	up := httptest.NewServer(demo.NewHTTPHandler(demo.NewServer(demo.Options{}), demo.HTTPOptions{}))
	t.Cleanup(up.Close)
	// startOn returns a gateway in front of the demo server at upURL, its
	// disk and its data directory.
	startOn := func(t *testing.T, upURL, extra string) (*child, *fulldisk.Disk, string) {
		t.Helper()
		dir := t.TempDir()
		cfgPath := filepath.Join(dir, "sluice.yaml")
		cfg := fmt.Sprintf("listen: 127.0.0.1:0\nadmin_listen: 127.0.0.1:0\nadmin_token: t0k\ndata_dir: %s\ntelemetry: {prometheus: true}\nclassifier: {provider: off}\nupstreams: [{name: demo, url: %q}]\n%s",
			filepath.Join(dir, "data"), upURL+"/mcp", extra)
		if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
			t.Fatal(err)
		}
		c := startChild(t, bin, cfgPath, true)
		return c, fulldisk.Process(t, c.cmd.Process.Pid), filepath.Join(dir, "data")
	}
	start := func(t *testing.T, extra string) (*child, *fulldisk.Disk, string) {
		t.Helper()
		return startOn(t, up.URL, extra)
	}

	t.Run("deny", func(t *testing.T) {
		c, disk, data := start(t, "policy: {default: allow}\naudit: {on_failure: deny}\n")
		if got := c.echo(t, 0); !strings.Contains(got, "call-0") {
			t.Fatalf("before the disk is full: got %s, want the echo", got)
		}
		disk.Fill(t)
		c.until(t, "a call refused with audit_unavailable", func(n int, reply string) bool {
			if !strings.Contains(reply, "call-"+strconv.Itoa(n)) && !strings.Contains(reply, "audit_unavailable") {
				t.Fatalf("call %d with the disk full: got %s, want the echo or audit_unavailable", n, reply)
			}
			return strings.Contains(reply, "audit_unavailable")
		})
		c.waitLog(t, `level=ERROR msg="audit: events cannot be written; calls are refused (audit_unavailable) until they can"`)
		c.logNames(t, `calls are refused`, filepath.Join(data, "events.db"))
		for n := 1000; n < 1003; n++ {
			if got := c.echo(t, n); !strings.Contains(got, `"jsonrpc":"2.0"`) || !strings.Contains(got, "audit_unavailable") {
				t.Fatalf("while the disk is full: got %s, want a JSON-RPC answer with audit_unavailable", got)
			}
		}
		c.notSpinning(t)
		disk.Free(t)
		c.until(t, "a call forwarded once space returned", func(n int, reply string) bool { return strings.Contains(reply, "call-"+strconv.Itoa(n)) })
		c.waitLog(t, `msg="audit: events are written again"`)
		if v := c.metric(t, "sluice_audit_available"); v != 1 {
			t.Errorf("sluice_audit_available once space returned: got %v, want 1", v)
		}
	})

	t.Run("warn", func(t *testing.T) {
		c, disk, data := start(t, "policy: {default: allow}\n")
		disk.Fill(t)
		for n := 0; c.metric(t, "sluice_audit_events_lost_total") < 1; n++ {
			if got := c.echo(t, n); !strings.Contains(got, "call-"+strconv.Itoa(n)) {
				t.Fatalf("warn mode, disk full: call %d got %s, want the echo", n, got)
			}
			if n > 2000 {
				t.Fatalf("sluice_audit_events_lost_total still 0 after %d calls on a full disk; logs:\n%s", n, c.logs)
			}
		}
		c.waitLog(t, `level=ERROR msg="audit: events cannot be written; calls go on unrecorded (audit.on_failure: warn)"`)
		c.logNames(t, `calls go on unrecorded`, filepath.Join(data, "events.db"))
		c.waitLog(t, `level=ERROR msg="audit: events lost" events=`)
		if v := c.metric(t, "sluice_audit_available"); v != 0 {
			t.Errorf("sluice_audit_available with the disk full: got %v, want 0", v)
		}
		c.notSpinning(t)
		disk.Free(t)
		c.waitLogAfter(t, `msg="audit: events are written again"`, func() { c.echo(t, -1) })
	})

	// The tool pins (inventory, JSON files in the data directory): a pin
	// that cannot be written holds in memory, so the gateway does not run
	// unpinned because its disk is full: a tool changed behind it is
	// still blocked, an operator's approval that cannot be written is
	// refused and changes nothing, and once space returns the approval is
	// written and takes effect.
	t.Run("pins", func(t *testing.T) {
		up := httptest.NewServer(demo.NewHTTPHandler(demo.NewServer(demo.Options{}), demo.HTTPOptions{}))
		t.Cleanup(up.Close)
		c, disk, data := startOn(t, up.URL, "policy: {default: allow, result_mode: tool_result}\n")
		url := "http://" + c.listen + "/mcp/demo"
		search := func() string {
			return modernCallFrom(t, &http.Client{Timeout: 15 * time.Second}, url, "agent-1", "tools/call", "web_search", `{"name":"web_search","arguments":{"query":"sluice"}}`)
		}
		disk.Fill(t)
		modernCall(t, url, "tools/list", "", "") // first sight: pinned, in memory only
		c.waitLog(t, `level=ERROR msg=inventory event=sluice.inventory_store_error upstream=demo`)
		if entries, _ := os.ReadDir(filepath.Join(data, "inventory", "pinned")); len(entries) > 0 {
			t.Fatalf("a pin was written with the disk full: %v", entries)
		}
		if got := search(); strings.Contains(got, "inventory_drift") || !strings.Contains(got, "sluice") {
			t.Fatalf("the pinned tool with the disk full: got %s, want it forwarded", got)
		}
		modernCall(t, url, "tools/call", "rotate_description", `{"name":"rotate_description","arguments":{}}`)
		modernCall(t, url, "tools/list", "", "") // sees the new description
		if got := search(); !strings.Contains(got, `"code":"inventory_drift"`) {
			t.Fatalf("a tool changed behind the gateway with the disk full: got %s, want inventory_drift (the pin holds in memory)", got)
		}
		approve := func() (int, string) {
			return c.admin(t, http.MethodPost, "/admin/inventory/demo/approve", `{"tool":"web_search"}`)
		}
		// 503, not 409 (which says the pin's state conflicts): nothing
		// changed, and the operator may try again.
		if code, body := approve(); code != http.StatusServiceUnavailable || !strings.Contains(body, "the inventory store cannot be written now") {
			t.Fatalf("approving the change with the disk full: got %d %s, want 503 saying the inventory store cannot be written", code, body)
		}
		if got := search(); !strings.Contains(got, `"code":"inventory_drift"`) {
			t.Fatalf("after an approval that could not be written: got %s, want still inventory_drift", got)
		}
		c.notSpinning(t)
		disk.Free(t)
		if code, body := approve(); code != http.StatusOK {
			t.Fatalf("approving once space returned: got %d %s", code, body)
		}
		if got := search(); strings.Contains(got, "inventory_drift") || !strings.Contains(got, "sluice") {
			t.Fatalf("the approved tool: got %s, want it forwarded", got)
		}
		if entries, err := os.ReadDir(filepath.Join(data, "inventory", "pinned")); err != nil || len(entries) == 0 {
			t.Fatalf("no pin on disk once space returned and the change was approved: %v %v", entries, err)
		}
	})

	t.Run("approvals", func(t *testing.T) {
		c, disk, _ := start(t, "policy: {default: allow, result_mode: tool_result, require_approval: [echo]}\n")
		held := c.echo(t, 1)
		m := regexp.MustCompile(`"approval_id":"(apr_[0-9a-f]+)"`).FindStringSubmatch(held)
		if m == nil {
			t.Fatalf("call: got %s, want it held with an approval_id", held)
		}
		disk.Fill(t)
		code, body := c.decide(t, m[1])
		if code != http.StatusServiceUnavailable || !strings.Contains(body, "approvals store is unavailable") {
			t.Fatalf("approve with the disk full: got %d %s, want 503 naming the approvals store", code, body)
		}
		if got := c.echo(t, 1); strings.Contains(got, "call-1") {
			t.Fatalf("a call whose approval was not stored was forwarded: %s", got)
		}
		// A new call to hold cannot be held: it is denied, and the log
		// says why, once (a store failing every call does not flood it).
		if got := c.echo(t, 2); !strings.Contains(got, "policy_error") {
			t.Fatalf("a call to hold with the disk full: got %s, want policy_error", got)
		}
		c.waitLog(t, `level=ERROR msg="approvals: the approvals store cannot be read or written; calls that need approval are denied (policy_error) and decisions refused (503) until it can" failures=1 err="approval: the approvals store is unavailable: writing it: disk I/O error (778)" path=`)
		for n := 3; n < 10; n++ {
			c.echo(t, n)
		}
		if lines := strings.Count(c.logs.String(), `msg="approvals: the approvals store cannot`); lines != 1 {
			t.Errorf("ERROR lines about the approvals store after 8 failures: got %d, want 1 (at most one every %v)", lines, lossReportEvery)
		}
		disk.Free(t)
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(100 * time.Millisecond) {
			if code, body = c.decide(t, m[1]); code == http.StatusOK {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("approve 10s after space returned: got %d %s", code, body)
			}
		}
		if got := c.echo(t, 1); !strings.Contains(got, "call-1") {
			t.Fatalf("the approved call once space returned: got %s, want the echo", got)
		}
		// The log says the outage ended, once, with how many operations
		// failed during it (the decision, the calls to hold, the retries).
		c.waitLog(t, `level=INFO msg="approvals: the approvals store answers again" failures=`)
		again := regexp.MustCompile(`level=INFO msg="approvals: the approvals store answers again" failures=(\d+) path=\S+approvals\.db`).FindAllStringSubmatch(c.logs.String(), -1)
		if len(again) != 1 {
			t.Fatalf("INFO lines saying the approvals store answers again: got %d, want 1:\n%s", len(again), c.logs)
		}
		if n, _ := strconv.Atoi(again[0][1]); n < 8 {
			t.Errorf("failures in the line saying the approvals store answers again: got %d, want at least 8 (the calls to hold echo 2 to 9)", n)
		}
	})
}

// TestServeStartsOnFullDisk: `sluice serve` started with its disk full
// (util-linux prlimit --fsize=0) exits at once with an error naming the
// event database, rather than serving calls it cannot record; before, the
// error said "audit: audit:".
func TestServeStartsOnFullDisk(t *testing.T) {
	prlimit, err := exec.LookPath("prlimit")
	if err != nil {
		t.Skip("no prlimit (util-linux)")
	}
	bin := buildSluice(t)
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "sluice.yaml")
	if err := os.WriteFile(cfgPath, []byte("listen: 127.0.0.1:0\nadmin_listen: 127.0.0.1:0\ndata_dir: "+filepath.Join(dir, "data")+
		"\npolicy: {default: allow}\nupstreams: [{name: demo, url: \"http://127.0.0.1:1/mcp\"}]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// Its output goes to a pipe: a file past the limit could not hold it.
	out, err := exec.CommandContext(ctx, prlimit, "--fsize=0", "--", bin, "serve", "--config", cfgPath).CombinedOutput()
	if ctx.Err() != nil || err == nil {
		t.Fatalf("sluice serve on a full disk: got %v (%v), want it to exit with an error:\n%s", err, ctx.Err(), out)
	}
	want := "sluice: audit: " + filepath.Join(dir, "data", "events.db") + ": "
	if !strings.Contains(string(out), want) || strings.Contains(string(out), "audit: audit:") {
		t.Errorf("sluice serve on a full disk said:\n%s\nwant a line starting %q", out, want)
	}
}

// echo calls the demo's echo with message call-n through c, with a
// timeout: a call that hangs fails the test.
func (c *child) echo(t *testing.T, n int) string {
	t.Helper()
	return modernCallFrom(t, &http.Client{Timeout: 15 * time.Second}, "http://"+c.listen+"/mcp/demo", "agent-1", "tools/call", "echo",
		fmt.Sprintf(`{"name":"echo","arguments":{"message":"call-%d"}}`, n))
}

// until calls echo until done says yes of a reply, for up to 10s.
func (c *child) until(t *testing.T, what string, done func(n int, reply string) bool) {
	t.Helper()
	for n, deadline := 1, time.Now().Add(10*time.Second); ; n++ {
		if done(n, c.echo(t, n)) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not after 10s of calls; logs:\n%s", what, c.logs)
		}
	}
}

// waitLog waits up to 10s for a line of c's log holding want.
func (c *child) waitLog(t *testing.T, want string) {
	t.Helper()
	c.waitLogAfter(t, want, func() {})
}

// waitLogAfter is waitLog doing poke before each look.
func (c *child) waitLogAfter(t *testing.T, want string, poke func()) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		poke()
		if strings.Contains(c.logs.String(), want) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("no log %s after 10s:\n%s", want, c.logs)
		}
	}
}

// logNames fails t unless the ERROR line of c's log holding msg names the
// file path after its error: which store failed, not only how.
func (c *child) logNames(t *testing.T, msg, path string) {
	t.Helper()
	line := regexp.MustCompile(`level=ERROR msg="[^"]*` + regexp.QuoteMeta(msg) + `[^"]*" err="[^"]*" path=(\S+)`).FindStringSubmatch(c.logs.String())
	if line == nil || line[1] != path {
		t.Errorf("ERROR line %q: got %v, want it to name path=%s; logs:\n%s", msg, line, path, c.logs)
	}
}

// metric returns the value of the Prometheus series name on c's admin
// listener, -1 if absent.
func (c *child) metric(t *testing.T, name string) float64 {
	t.Helper()
	code, body := c.admin(t, http.MethodGet, "/metrics", "")
	if code != http.StatusOK {
		t.Fatalf("/metrics: %d %s", code, body)
	}
	return seriesValue(t, body, name)
}

// decide approves the held request id through c's admin API.
func (c *child) decide(t *testing.T, id string) (int, string) {
	t.Helper()
	return c.admin(t, http.MethodPost, "/admin/approvals/"+id, `{"action":"approve","by":"ops"}`)
}

func (c *child) admin(t *testing.T, method, path, body string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(method, "http://"+c.adminAt+path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer t0k")
	req.Header.Set("Content-Type", "application/json")
	resp, err := (&http.Client{Timeout: 15 * time.Second}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// notSpinning fails the test if c uses more than a quarter of a CPU over
// a second with no calls, or has exited.
func (c *child) notSpinning(t *testing.T) {
	t.Helper()
	cpu := func() float64 {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", c.cmd.Process.Pid))
		if err != nil {
			t.Fatalf("the gateway is gone: %v; logs:\n%s", err, c.logs)
		}
		s := string(b)
		f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
		utime, _ := strconv.ParseFloat(f[11], 64) // fields 14 and 15 of stat(5)
		stime, _ := strconv.ParseFloat(f[12], 64)
		return (utime + stime) / 100 // clock ticks (USER_HZ) to seconds
	}
	before := cpu()
	time.Sleep(time.Second) // measuring a rate over an interval, not waiting for an event
	if used := cpu() - before; used > 0.25 {
		t.Errorf("the gateway used %.2fs of CPU in 1s with no calls and the disk full: spinning", used)
	}
	select {
	case <-c.exited:
		t.Fatalf("the gateway exited with the disk full; logs:\n%s", c.logs)
	default:
	}
}

// TestWrapRouteMemoryDiskFull: `sluice wrap` keeps route memory in
// data_dir/route-memory.db. With its disk full, a sensitive read whose
// memory cannot be written is denied (policy_error) rather than forwarded
// unremembered, and the log says why; a sink after a sensitive read
// remembered (by another wrap) before the disk filled is still denied:
// the memory is read from the full disk. Once space returns, reads are
// forwarded again.
func TestWrapRouteMemoryDiskFull(t *testing.T) {
	dir := buildWrap(t)
	cfg := filepath.Join(dir, "sluice.yaml")
	if err := os.WriteFile(cfg, []byte("data_dir: "+filepath.Join(dir, "data")+"\nclassifier: {provider: off}\n"+`policy:
  default: allow
  result_mode: tool_result
  tool_classes:
    docs/read_document: [source:sensitive]
    docs/web_search: [sink:network]
  route_rules:
    - {id: no-exfil, scope: agent, after: {match_any_class: [source:sensitive]}, deny: {match_any_class: [sink:network]}, reason: no sink after a sensitive read}
`), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	logs := &syncBuffer{}
	var wrap *exec.Cmd
	start := func() *client.Client {
		tr := transport.NewStdioWithOptions(filepath.Join(dir, "sluice"), nil,
			[]string{"wrap", "--name", "docs", "--admin-listen", "off", "--config", cfg, "--", filepath.Join(dir, "demo-server")},
			transport.WithCommandStderrWriter(logs),
			transport.WithCommandFunc(func(ctx context.Context, command string, env []string, args []string) (*exec.Cmd, error) {
				wrap = exec.CommandContext(ctx, command, args...)
				wrap.Env = append(os.Environ(), env...)
				return wrap, nil
			}))
		c := client.NewClient(tr)
		if err := c.Start(ctx); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		if _, err := c.Initialize(ctx, mcp.InitializeRequest{Params: mcp.InitializeParams{ClientInfo: mcp.Implementation{Name: "desktop", Version: "1"}}}); err != nil {
			t.Fatalf("Initialize through wrap: %v", err)
		}
		return c
	}
	call := func(c *client.Client, tool, args string) (*mcp.CallToolResult, string) {
		t.Helper()
		var a map[string]any
		if err := json.Unmarshal([]byte(args), &a); err != nil {
			t.Fatal(err)
		}
		res, err := c.CallTool(ctx, mcp.CallToolRequest{Params: mcp.CallToolParams{Name: tool, Arguments: a}})
		if err != nil {
			t.Fatalf("%s: %v", tool, err)
		}
		return res, text(res)
	}
	remembered, unremembered := start(), start()
	if res, got := call(remembered, "read_document", readSalaries); res.IsError {
		t.Fatalf("sensitive read before the disk is full: %s", got)
	}
	disk := fulldisk.Process(t, wrap.Process.Pid) // the second wrap's
	disk.Fill(t)
	res, got := call(unremembered, "read_document", readSalaries)
	if !res.IsError || !strings.Contains(got, "could not be recorded") || strings.Contains(got, "salar") {
		t.Errorf("sensitive read with route memory unwritable: got %s, want it denied with policy_error", got)
	}
	for deadline := time.Now().Add(10 * time.Second); !strings.Contains(logs.String(), `level=ERROR msg="policy: cannot write route memory; the call is denied"`); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no ERROR log of the unwritable route memory after 10s:\n%s", logs)
		}
	}
	if res, got := call(unremembered, "web_search", search); !res.IsError || !strings.Contains(got, "no sink after a sensitive read") {
		t.Errorf("sink with the disk full after a sensitive read remembered before: got %s, want the no-exfil deny", got)
	}
	disk.Free(t)
	if res, got := call(unremembered, "read_document", readSalaries); res.IsError {
		t.Fatalf("sensitive read once space returned: %s", got)
	}
}
