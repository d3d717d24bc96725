package main

import (
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/sluicehq/sluice/audit"
	"github.com/sluicehq/sluice/examples/demo-server/demo"
	"github.com/sluicehq/sluice/gateway"
)

// demoPolicy allows the demo server's harmless tools and denies the one
// that sends data out, so the first call a user tries shows governance.
const demoPolicy = `
policy:
  default: deny
  result_mode: tool_result
  tool_classes:
    echo: [compute:local]
    add: [compute:local]
    slow_count: [compute:local]
    read_document: [source:local, source:sensitive]
    web_search: [sink:network]
    send_email: [sink:external]
  rules:
    - id: allow-local
      match: {match_any_class: [compute:local, source:local]}
      decision: allow
      reason: local tools are allowed
    - id: allow-search
      match: {match_tool: web_search}
      decision: allow
      reason: web search is allowed
    - id: big-sums
      match: {match_tool: add}
      when: 'args.a > 1000'
      decision: require_approval
      reason: adding big numbers needs a human (the console's Approvals page)
    - id: no-external-sinks
      match: {match_any_class: [sink:external]}
      decision: deny
      reason: sending data outside the organisation is not allowed
  route_rules:
    - id: no-network-after-sensitive-read
      after: {match_any_class: [source:sensitive]}
      deny: {match_any_class: [sink:network, sink:external]}
      scope: agent
      window: 24h
      reason: no network calls after reading a sensitive document
`

// demoOut is where the demo prints how to try it (tests read it).
var demoOut io.Writer = os.Stdout

// runDemo starts the example MCP server from examples/demo-server on a
// loopback port and the gateway in front of it, then prints how to try it.
func runDemo(ctx context.Context, args []string) error {
	fs := newFlagSet("demo")
	listen := fs.String("listen", "127.0.0.1:8080", "gateway listen address")
	newLog := logFlags(fs)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageErrorf("demo: unexpected argument %q", fs.Arg(0))
	}
	logger, err := newLog()
	if err != nil {
		return err
	}

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	upSrv := &http.Server{Handler: demo.NewHTTPHandler(demo.NewServer(demo.Options{}), demo.HTTPOptions{})}
	go upSrv.Serve(ln)
	defer upSrv.Close()

	cfg, err := parseConfig("demo policy", []byte(demoPolicy))
	if err != nil {
		return err
	}
	cfg.Listen = *listen
	// A fresh data directory per demo run: the demo pins the example
	// server's tools anew each time.
	dir, err := os.MkdirTemp("", "sluice-demo-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	cfg.DataDir = dir
	cfg.Upstreams = []gateway.Upstream{{Name: "demo", Transport: gateway.TransportStreamableHTTP, URL: "http://" + ln.Addr().String() + "/mcp"}}
	// The operator console, on a loopback port of its own, with a token
	// made for this run.
	cfg.AdminListen = "127.0.0.1:0"
	cfg.AdminToken, cfg.adminTokenRandom = rand.Text(), true
	err = serve(ctx, cfg, logger, func(at bound) {
		addr := at.Listen
		url := "http://" + addr + "/mcp/demo"
		fmt.Fprintf(demoOut, `
Sluice demo is running.
  MCP endpoint (Streamable HTTP): %[1]s
  also: http://%[2]s/sse/demo (HTTP+SSE) and ws://%[2]s/ws/demo (WebSocket)
  policy: local tools and web_search allowed; send_email denied; web_search denied once an agent read a document; add of a > 1000 held for approval

Try a call the policy denies (MCP 2026-07-28, one request, no session needed):

curl -s %[1]s -H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream' -H 'Mcp-Protocol-Version: 2026-07-28' -H 'Mcp-Method: tools/call' -H 'Mcp-Name: send_email' -d '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"send_email","arguments":{"to":"x@example.com","subject":"hi","body":"secret"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"curl","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}}}}'

Then change send_email to echo (name, Mcp-Name and arguments {"message":"hi"}) to see an allowed call pass through.
Route memory: call read_document {"path":"/hr/salaries.csv"}, then web_search {"query":"x"}: the search is now denied.
Or point any MCP client at %[1]s. Ctrl-C stops.

A call held for a human: add {"a":5000,"b":1} is held until approved on the console's Approvals page,
or with: %[6]s approvals list --admin %[3]s --token %[4]s
then: %[6]s approvals approve ID --admin %[3]s --token %[4]s, and the retried call goes through.

Operator console: http://%[3]s/console/ (sign in with any name and the token %[4]s)
Audit events: %[6]s events query --db %[5]s (removed when the demo stops)
`, url, addr, at.Admin, cfg.AdminToken, filepath.Join(dir, audit.FileName), selfCommand())
	})
	return err // a port in use: serve says to pick another with --listen
}

// selfCommand is how a shell runs this program again: "sluice" when that
// is what PATH finds, else the executable's path. Under `go run
// ./cmd/sluice demo`, the README's first command, no sluice is on PATH,
// and the demo's printed `sluice approvals list …` was "command not
// found"; the executable go run built stays while the demo runs, which is
// as long as the printed commands are of use.
func selfCommand() string {
	exe, err := os.Executable()
	if err != nil {
		return "sluice"
	}
	if p, err := exec.LookPath("sluice"); err == nil {
		a, errA := os.Stat(p)
		b, errB := os.Stat(exe)
		if errA == nil && errB == nil && os.SameFile(a, b) {
			return "sluice"
		}
	}
	return shellQuote(exe)
}

// shellQuote writes s as one word of a POSIX shell command line.
func shellQuote(s string) string {
	if s != "" && !strings.ContainsAny(s, " \t\n'\"$`\\;&|<>()*?[]#~!{}") {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
