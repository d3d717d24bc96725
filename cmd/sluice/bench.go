package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/sluicehq/sluice/a2a"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/sluicehq/sluice/examples/demo-server/demo"
	"github.com/sluicehq/sluice/gateway"
	"github.com/sluicehq/sluice/internal/bench"
)

// benchPolicy is the static policy of the Sluice under test: the one tool
// the benchmark calls is allowed, everything else denied.
const benchPolicy = `
policy:
  default: deny
  allow: [echo, "a2a:bench/send"]
`

// benchTargets are the targets in the order they run. "bare" is the
// baseline of the issue: httputil.ReverseProxy with the default transport.
// "bare-pooled" is the same proxy keeping as many idle upstream
// connections as Sluice does, so that a connection pool cannot pass for
// a faster proxy.
// "sluice" is the whole default stack: policy, built-in classifier, audit
// store, inventory. "sluice-noaudit" is the same without the local audit
// store, to measure what recording every call costs; "sluice-core" has
// only the decision point (static policy: no classifier, no audit), the
// configuration the gateway core's throughput target is stated for.
//
// The a2a-* targets measure A2A SendMessage instead of tools/call, against
// a minimal A2A agent the upstream also serves: "a2a-direct",
// "a2a-bare-pooled" (the pooled hop) and "a2a-sluice" (the default stack
// with the agent under agents:, messages decided like tool calls). They
// run only when named in --targets.
var benchTargets = []string{"direct", "bare", "bare-pooled", "sluice", "sluice-noaudit", "sluice-core"}

var a2aBenchTargets = []string{"a2a-direct", "a2a-bare-pooled", "a2a-sluice"}

// replicaBenchTargets run the default stack as several replicas behind a
// client that sends each call to the next one ("sluice-2x": two); their
// CPU and RSS are summed, so the row says what the fleet spends per call.
// They run only when named in --targets.
var replicaBenchTargets = []string{"sluice-2x"}

// gatewayIdleConns mirrors the per-host idle connection limit of the
// gateway's upstream client, for bare-pooled.
const gatewayIdleConns = 256

// runBench measures tools/call round trips direct to an upstream, through
// a bare reverse proxy and through Sluice. The upstream and each proxy run
// as child processes of this binary (`sluice bench --role ...`), so that
// their CPU time is theirs alone.
func runBench(ctx context.Context, args []string) error {
	return benchTo(ctx, args, os.Stdout, os.Stderr)
}

// benchTo is runBench writing the report to stdout and progress and
// problems to stderr.
func benchTo(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("bench")
	duration := fs.Duration("duration", 5*time.Second, "length of each measured run")
	warmup := fs.Duration("warmup", time.Second, "warm-up before each measured run")
	rounds := fs.Int("rounds", 1, "measure every target and concurrency this many times, interleaved, and report the totals")
	conc := fs.String("concurrency", "1,32", "comma-separated concurrency levels")
	targets := fs.String("targets", strings.Join(benchTargets, ","), "comma-separated targets: "+strings.Join(benchTargets, ", ")+"; run only when named: "+strings.Join(slices.Concat(a2aBenchTargets, replicaBenchTargets), ", ")+" (A2A SendMessage; two replicas of sluice)")
	jsonOut := fs.Bool("json", false, "print the report as JSON")
	profDir := fs.String("cpuprofile-dir", "", "write a CPU profile of each child process to DIR/<role>.pprof")
	sluiceLog := fs.String("sluice-log", "info", "log level of the Sluice child, as sluice serve's --log-level: info (serve's default) logs denied and held calls, which the bench makes none of; debug logs every decision, allows included")
	sessions := fs.Int("sessions", 0, "instead of measuring calls, open this many idle 2025-era sessions through the default stack and report its RSS per session, then wait out --session-idle-timeout and check they are gone")
	sessionIdle := fs.Duration("session-idle-timeout", 0, "the Sluice child's session_idle_timeout (--sessions mode; default 30s there)")
	// The child roles; not for people.
	role := fs.String("role", "", "")
	listen := fs.String("listen", "127.0.0.1:0", "")
	target := fs.String("target", "", "")
	cpuprofile := fs.String("cpuprofile", "", "")
	idleConns := fs.Int("idle-conns", 0, "")
	maxSessions := fs.Int("max-sessions", 0, "")
	if err := parseFlags(fs, args); err != nil {
		return err // the child roles' flags have no usage text: printFlags leaves them out
	}
	if fs.NArg() > 0 {
		return usageErrorf("bench: unexpected arguments %q", fs.Args())
	}

	if *role != "" {
		return runBenchChild(ctx, benchChild{
			role: *role, listen: *listen, target: *target, cpuprofile: *cpuprofile,
			idleConns: *idleConns, logLevel: *sluiceLog, maxSessions: *maxSessions, sessionIdle: *sessionIdle,
		})
	}

	if *rounds < 1 {
		return fmt.Errorf("bench: --rounds: %d is less than 1", *rounds)
	}
	levels, err := parseConcurrency(*conc)
	if err != nil {
		return err
	}
	names, err := parseTargets(*targets)
	if err != nil {
		return err
	}
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	if *profDir != "" {
		if err := os.MkdirAll(*profDir, 0o755); err != nil {
			return err
		}
	}
	childArgs := func(role string, extra ...string) []string {
		a := []string{"bench", "--role", role, "--sluice-log", *sluiceLog}
		if *profDir != "" {
			a = append(a, "--cpuprofile", filepath.Join(*profDir, role+".pprof"))
		}
		return append(a, extra...)
	}

	// Children are stopped in reverse order on every return path; a parent
	// killed outright takes them along through the parent-death signal.
	var children []*bench.Child
	defer func() {
		for i := len(children) - 1; i >= 0; i-- {
			if err := children[i].Stop(5 * time.Second); err != nil {
				fmt.Fprintf(stderr, "sluice bench: %v\n", err)
			}
		}
	}()
	start := func(name string, args []string) (*bench.Child, error) {
		c, err := bench.StartChild(ctx, name, exe, args...)
		if err != nil {
			return nil, err
		}
		children = append(children, c)
		return c, nil
	}

	up, err := start("upstream", childArgs("upstream"))
	if err != nil {
		return err
	}
	upBase := "http://" + up.Addr
	if *sessions > 0 {
		idle := *sessionIdle
		if idle <= 0 {
			idle = 30 * time.Second
		}
		gw, err := start("sluice", childArgs("sluice", "--target", upBase+"/mcp", "--max-sessions", strconv.Itoa(*sessions+100),
			"--session-idle-timeout", idle.String()))
		if err != nil {
			return err
		}
		return benchSessions(ctx, stdout, stderr, "http://"+gw.Addr+"/mcp/bench", gw.PID(), *sessions, idle)
	}
	type endpoint struct {
		url   string
		proxy *bench.Child
		// more are further replicas of the target (sluice-2x).
		more []*bench.Child
	}
	endpoints := map[string]endpoint{"direct": {url: upBase + "/mcp"}}
	for _, name := range names {
		var args []string
		path := "/mcp"
		switch name {
		case "direct":
			continue
		case "bare":
			args = childArgs("bare", "--target", upBase)
		case "bare-pooled":
			args = childArgs("bare-pooled", "--target", upBase, "--idle-conns", strconv.Itoa(gatewayIdleConns))
		case "sluice", "sluice-noaudit", "sluice-core":
			args = childArgs(name, "--target", upBase+"/mcp")
			path = "/mcp/bench"
		case "a2a-direct":
			endpoints[name] = endpoint{url: upBase + "/a2a-agent/rpc"}
			continue
		case "a2a-bare-pooled":
			args = childArgs("bare-pooled", "--target", upBase, "--idle-conns", strconv.Itoa(gatewayIdleConns))
			path = "/a2a-agent/rpc"
		case "a2a-sluice":
			args = childArgs(name, "--target", upBase+"/a2a-agent")
			path = "/a2a/bench"
		case "sluice-2x":
			args = childArgs("sluice", "--target", upBase+"/mcp")
			path = "/mcp/bench"
			second, err := start(name+"-b", args)
			if err != nil {
				return err
			}
			c, err := start(name, args)
			if err != nil {
				return err
			}
			endpoints[name] = endpoint{url: "http://" + c.Addr + path, proxy: c, more: []*bench.Child{second}}
			continue
		}
		c, err := start(name, args)
		if err != nil {
			return err
		}
		endpoints[name] = endpoint{url: "http://" + c.Addr + path, proxy: c}
	}

	client := bench.NewClient(max(64, 2*slices.Max(levels)))
	calls := map[string]bench.Call{}
	for _, name := range names {
		ep := endpoints[name]
		switch {
		case strings.HasPrefix(name, "a2a-"):
			calls[name] = (&bench.A2ASend{Client: client, URL: ep.url, Text: "hi", Want: "TASK_STATE_COMPLETED"}).Do
		case len(ep.more) > 0:
			replicas := []bench.Call{(&bench.ToolCall{Client: client, URL: ep.url, Tool: demo.ToolEcho, Arguments: `{"message":"hi"}`, Want: "Echo: hi"}).Do}
			for _, c := range ep.more {
				replicas = append(replicas, (&bench.ToolCall{Client: client, URL: "http://" + c.Addr + "/mcp/bench", Tool: demo.ToolEcho, Arguments: `{"message":"hi"}`, Want: "Echo: hi"}).Do)
			}
			var next atomic.Uint64
			calls[name] = func(ctx context.Context) error { return replicas[next.Add(1)%uint64(len(replicas))](ctx) }
		default:
			calls[name] = (&bench.ToolCall{Client: client, URL: ep.url, Tool: demo.ToolEcho, Arguments: `{"message":"hi"}`, Want: "Echo: hi"}).Do
		}
		// One call first, so that a target that cannot answer at all fails
		// fast with its error instead of as a table full of errors.
		if err := calls[name](ctx); err != nil {
			return fmt.Errorf("%s (%s): %w", name, ep.url, err)
		}
	}
	// Rounds interleave the targets so that a machine that gets busier or
	// quieter during the run does not favour the targets measured first.
	type key struct {
		target string
		c      int
	}
	totals := map[key]*bench.Measurement{}
	report := &bench.Report{}
	for round := range *rounds {
		var rows []bench.Row
		for _, name := range names {
			for _, c := range levels {
				p := bench.Phase{Target: name, Concurrency: c, Warmup: *warmup, Duration: *duration, Call: calls[name], UpstreamPID: up.PID()}
				if proxy := endpoints[name].proxy; proxy != nil {
					p.ProxyPID = proxy.PID()
				}
				for _, c := range endpoints[name].more {
					p.ReplicaPIDs = append(p.ReplicaPIDs, c.PID())
				}
				if !*jsonOut {
					fmt.Fprintf(stderr, "round %d/%d: %s c=%d\n", round+1, *rounds, name, c)
				}
				m, err := bench.Measure(ctx, p)
				if err != nil {
					return err
				}
				rows = append(rows, m.Row()) // before Add, which may change m
				if t := totals[key{name, c}]; t != nil {
					t.Add(m)
				} else {
					totals[key{name, c}] = m
				}
			}
		}
		if *rounds > 1 {
			report.Rounds = append(report.Rounds, rows)
		}
	}
	for _, name := range names {
		for _, c := range levels {
			report.Rows = append(report.Rows, totals[key{name, c}].Row())
		}
	}
	report.AddRatios("sluice", "bare")
	report.AddRatios("sluice", "bare-pooled")
	report.AddRatios("sluice", "sluice-noaudit")
	report.AddRatios("sluice-core", "bare")
	report.AddRatios("sluice-core", "bare-pooled")
	report.AddRatios("a2a-sluice", "a2a-bare-pooled")
	report.AddRatios("sluice-2x", "bare-pooled")
	report.AddRatios("sluice-2x", "sluice")

	if *jsonOut {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(report); err != nil {
			return err
		}
	} else if err := report.WriteTable(stdout); err != nil {
		return err
	}
	if n := report.Errors(); n > 0 {
		return fmt.Errorf("bench: %d calls failed", n)
	}
	return nil
}

func parseConcurrency(s string) ([]int, error) {
	var levels []int
	for f := range strings.SplitSeq(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			return nil, fmt.Errorf("bench: --concurrency: %q is not a positive integer", f)
		}
		levels = append(levels, n)
	}
	return levels, nil
}

func parseTargets(s string) ([]string, error) {
	var names []string
	for f := range strings.SplitSeq(s, ",") {
		f = strings.TrimSpace(f)
		found := false
		all := slices.Concat(benchTargets, a2aBenchTargets, replicaBenchTargets)
		for _, t := range all {
			found = found || t == f
		}
		if !found {
			return nil, fmt.Errorf("bench: --targets: %q is not one of %s", f, strings.Join(all, ", "))
		}
		names = append(names, f)
	}
	return names, nil
}

// benchChild holds the flags of a child role.
type benchChild struct {
	role       string // upstream, bare, bare-pooled or sluice
	listen     string
	target     string // the upstream's URL, for the proxies
	cpuprofile string // file to write a CPU profile to, if set
	idleConns  int    // idle upstream connections kept by bare-pooled
	logLevel   string // of the sluice role
	// maxSessions and sessionIdle, if set, are the sluice role's
	// max_sessions (and per agent and client) and session_idle_timeout.
	maxSessions int
	sessionIdle time.Duration
}

// runBenchChild serves one role until the parent closes stdin or a signal
// arrives, having announced its address on stdout.
func runBenchChild(ctx context.Context, c benchChild) error {
	ctx, cancel := bench.WithParent(ctx)
	defer cancel()
	if c.cpuprofile != "" {
		f, err := os.Create(c.cpuprofile)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}

	switch c.role {
	case "upstream":
		mux := http.NewServeMux()
		mux.Handle("/mcp", demo.NewHTTPHandler(demo.NewServer(demo.Options{}), demo.HTTPOptions{JSONResponse: true}))
		return serveBenchHandlerFunc(ctx, c.listen, func(addr string) http.Handler {
			mux.Handle("/a2a-agent/", http.StripPrefix("/a2a-agent", bench.A2AAgent("http://"+addr+"/a2a-agent")))
			return mux
		})
	case "bare", "bare-pooled":
		u, err := url.Parse(c.target)
		if err != nil || u.Host == "" {
			return fmt.Errorf("bench: --target: %q is not an absolute URL", c.target)
		}
		return serveBenchHandler(ctx, c.listen, bench.NewBareProxy(u, bench.BareProxyOptions{IdleConnsPerHost: c.idleConns}))
	case "sluice", "sluice-noaudit", "sluice-core", "a2a-sluice":
		var level slog.Level
		if err := level.UnmarshalText([]byte(c.logLevel)); err != nil {
			return fmt.Errorf("bench: --sluice-log: %w", err)
		}
		cfg, err := parseConfig("bench policy", []byte(benchPolicy))
		if err != nil {
			return err
		}
		cfg.Listen = c.listen
		cfg.ShutdownTimeout = 2 * time.Second
		dir, err := os.MkdirTemp("", "sluice-bench-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		cfg.DataDir = dir
		cfg.Audit.Off = c.role != "sluice"
		if c.role == "sluice-core" {
			cfg.Classifier.Provider = "off"
		}
		if c.maxSessions > 0 {
			cfg.MaxSessions, cfg.MaxSessionsPerAgent, cfg.MaxSessionsPerClient = c.maxSessions, c.maxSessions, c.maxSessions
		}
		if c.sessionIdle > 0 {
			cfg.SessionIdleTimeout = c.sessionIdle
		}
		cfg.Upstreams = []gateway.Upstream{{Name: "bench", Transport: gateway.TransportStreamableHTTP, URL: c.target}}
		if c.role == "a2a-sluice" {
			cfg.Audit.Off = false
			cfg.Upstreams = nil
			cfg.Agents = []a2a.Agent{{Name: "bench", URL: c.target}}
		}
		logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
		var announceErr error
		err = serve(ctx, cfg, logger, func(at bound) { announceErr = bench.Announce(at.Listen) })
		return errors.Join(err, announceErr)
	default:
		return fmt.Errorf("bench: --role: unknown role %q", c.role)
	}
}

// serveBenchHandler serves h on listen until ctx ends.
func serveBenchHandler(ctx context.Context, listen string, h http.Handler) error {
	return serveBenchHandlerFunc(ctx, listen, func(string) http.Handler { return h })
}

// serveBenchHandlerFunc is serveBenchHandler with the handler made once
// the listener's address is known.
func serveBenchHandlerFunc(ctx context.Context, listen string, h func(addr string) http.Handler) error {
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: h(ln.Addr().String()), ReadHeaderTimeout: 10 * time.Second}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	if err := bench.Announce(ln.Addr().String()); err != nil {
		srv.Close()
		return err
	}
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		srv.Close()
	}
	if err := <-errc; !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
