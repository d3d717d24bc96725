package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/sluicehq/sluice/gateway"
	"github.com/sluicehq/sluice/gateway/transport"
)

// runWrap makes Sluice a stdio MCP server in front of one upstream, so a
// desktop client's config changes only its command.
func runWrap(ctx context.Context, args []string) error {
	// A client that goes away while wrap writes to it must end wrap as
	// any client gone does, its server stopped. Go's default for a write
	// to a broken stdout is to die of SIGPIPE, which skipped all that.
	// Notify, not Ignore: an ignored signal stays ignored in the server.
	sigpipe := make(chan os.Signal, 1)
	signal.Notify(sigpipe, syscall.SIGPIPE)
	defer signal.Stop(sigpipe)
	return wrapIO(ctx, args, os.Stdin, os.Stdout, nil)
}

// wrapIO is runWrap serving MCP on stdin and stdout. ready, if not nil,
// gets the admin listener's address (bound.Admin; empty without one)
// once the gateway serves.
func wrapIO(ctx context.Context, args []string, stdin io.Reader, stdout io.Writer, ready func(bound)) error {
	flags := newFlagSet("wrap")
	cfgPath := flags.String("config", "", "config file with the policy (optional; without one every tools/call is denied)")
	name := flags.String("name", "", "the wrapped server's name in the inventory, events, approvals and the policy's upstream (default: from the command or URL, such as server-filesystem)")
	adminListen := flags.String("admin-listen", "", "admin API address, over the config's admin_listen; off for none (two wraps sharing a config need one each, such as 127.0.0.1:0)")
	rawURL := flags.String("url", "", "URL of a Streamable HTTP upstream (instead of a command)")
	transportName := flags.String("transport", "", "upstream transport for --url: streamable-http (default), sse or websocket")
	newLog := logFlags(flags)
	if err := parseFlags(flags, args); err != nil {
		return err
	}
	logger, err := newLog()
	if err != nil {
		return err
	}
	cfg := &config{path: "wrap"}
	if *cfgPath != "" {
		if cfg, err = loadConfig(*cfgPath); err != nil {
			if errors.Is(err, fs.ErrNotExist) && !filepath.IsAbs(*cfgPath) {
				wd, _ := os.Getwd()
				return fmt.Errorf("%w (relative to the working directory %s: desktop clients start sluice in a directory of their own, so give --config an absolute path)", err, wd)
			}
			return err
		}
	}
	switch *adminListen {
	case "":
	case "off":
		cfg.AdminListen = ""
	default:
		cfg.AdminListen = *adminListen
	}
	if cfg.AgentHeaderRequired {
		return errors.New("wrap: agent_header_required cannot be met over stdio, which carries no headers; use a config without it for wrap")
	}
	up := gateway.Upstream{URL: *rawURL, Transport: gateway.Transport(*transportName)}
	switch {
	case *rawURL != "" && flags.NArg() > 0:
		return usageErrorf("wrap: give either --url or a command after --, not both")
	case *rawURL == "" && flags.NArg() == 0:
		return usageErrorf("wrap: give a command after -- or --url")
	case flags.NArg() > 0:
		up.Command, up.Args = flags.Arg(0), flags.Args()[1:]
		// The client that runs wrap gives it the server's environment
		// (its config's env), so the server inherits it all, but for
		// what is Sluice's own: SLUICE_*, what this config's ${VAR}s and
		// api_key_env read, OTEL_* while Sluice exports over OTLP.
		up.InheritEnv, up.WithholdEnv = []string{"*"}, cfg.withheldEnv()
	}
	up.Name = *name
	if up.Name == "" {
		up.Name = wrapName(flags.Args(), *rawURL)
	} else if !upstreamName.MatchString(up.Name) {
		return usageErrorf("wrap: --name %q: use letters, digits, '.', '_' and '-', starting with a letter or digit", up.Name)
	}
	// The wrapped server is the config's only upstream here: preflight
	// checks it, and no listen address (stdio listens on none).
	wcfg := *cfg
	wcfg.Listen, wcfg.Upstreams, wcfg.wrapped = "127.0.0.1:0", []gateway.Upstream{up}, true
	ck, err := wcfg.preflight()
	if err != nil {
		return err
	}
	for _, w := range ck.Warnings {
		logger.Warn(w, "upstream", up.Name)
	}
	// Every wrap on this data directory shares one route memory: a
	// desktop client runs one wrap per server, and a source read through
	// one must count when a sink is called through another.
	cfg.routeMemoryFile = true
	gv, err := buildGovernance(ctx, cfg, logger)
	if err != nil {
		return err
	}
	defer func() {
		// A wrap has no drain: its client is gone. The audit store's
		// last writes get shutdown_timeout, whatever holds the database.
		cctx, cancel := closeWithin(time.Now().Add(shutdownTimeout(cfg)))
		defer cancel()
		gv.close(cctx)
	}()
	var at bound
	if cfg.AdminListen != "" {
		// Approvals and inventory reviews need the admin API here too;
		// without it `sluice approvals` would talk to another gateway.
		h, err := adminHandler(cfg, gv, logger)
		if err != nil {
			return err
		}
		ln, err := net.Listen("tcp", cfg.AdminListen)
		if err != nil {
			return fmt.Errorf("wrap %s: admin_listen %s: %w: another gateway or `sluice wrap` with this config probably has it; "+
				"give each wrap its own port with --admin-listen (127.0.0.1:0 picks a free one, logged at start), or --admin-listen off", up.Name, cfg.AdminListen, err)
		}
		admin := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
		go admin.Serve(ln)
		defer admin.Close()
		at.Admin = ln.Addr().String()
		logger.Info("admin API listening", "addr", at.Admin, "upstream", up.Name)
		if pickedPort(cfg.AdminListen) {
			defer announceAdmin(cfg, at.Admin, logger)()
		}
	}
	opts := cfg.options()
	opts.Upstreams = []gateway.Upstream{up}
	opts.Tracer = gv.tp.Tracer()
	opts.Metrics = gv.tp.Metrics()
	opts.OnSessionEnd = gv.sessionEnded
	if cfg.Approvals.ClientMayAnswer {
		opts.Approver = gv.approvals // clients that can elicit approve held calls themselves
	}
	g, err := gateway.New(opts, gv.ic, logger)
	if err != nil {
		return err
	}
	defer g.Close()
	logger.Info("sluice wrap serving on stdio", "upstream", up.Name, "target", strings.Join(append([]string{up.Command}, up.Args...), " ")+up.URL)
	logSummary(logger, cfg, ck, nil, at, false)
	if ready != nil {
		ready(at)
	}
	// The client's lines are requests: bounded like a request body.
	// One past the bound is answered and dropped, not the end of the session.
	down := transport.NewStdioConn(stdin, withWriteDeadline(stdout), &transport.StdioOptions{MaxMessageBytes: cmp.Or(opts.MaxBodyBytes, gateway.DefaultMaxBodyBytes), AnswerTooLong: true})
	err = g.ServeConn(ctx, up.Name, down)
	if err == nil || errors.Is(err, io.EOF) || errors.Is(err, context.Canceled) || errors.Is(err, transport.ErrClosed) {
		return nil
	}
	return fmt.Errorf("wrap: %w", err)
}

// withWriteDeadline returns w if it takes write deadlines, else w behind a
// stallWriter: os.Stdout on a blocking pipe takes none, and a client that
// stops reading (hung, or done with the server but still running) would
// hold a write to it, and with it the relay, for ever. wrap would then
// ignore SIGTERM, its server running on.
func withWriteDeadline(w io.Writer) io.Writer {
	if d, ok := w.(interface{ SetWriteDeadline(time.Time) error }); ok && d.SetWriteDeadline(time.Time{}) == nil {
		return w
	}
	return &stallWriter{w: w, changed: make(chan struct{})}
}

// errWriteGivenUp is what a stallWriter's writes return once one was given
// up: part of it may yet be written, so no later line could be read.
var errWriteGivenUp = errors.New("an earlier write was given up at its deadline (the reader stopped reading)")

// A stallWriter gives w write deadlines: each write runs on a goroutine
// of its own, and one still blocked when the deadline passes is given
// up, its goroutine left blocked, and every later write fails.
type stallWriter struct {
	w io.Writer

	mu       sync.Mutex // guards the fields below
	deadline time.Time
	changed  chan struct{} // closed, and replaced, when deadline changes
	givenUp  bool
}

func (s *stallWriter) SetWriteDeadline(t time.Time) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.deadline = t
	close(s.changed)
	s.changed = make(chan struct{})
	return nil
}

func (s *stallWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	givenUp := s.givenUp
	s.mu.Unlock()
	if givenUp {
		return 0, errWriteGivenUp
	}
	type result struct {
		n   int
		err error
	}
	done := make(chan result, 1)
	go func() {
		n, err := s.w.Write(p)
		done <- result{n, err}
	}()
	for {
		s.mu.Lock()
		deadline, changed := s.deadline, s.changed
		s.mu.Unlock()
		var expired <-chan time.Time
		var t *time.Timer
		if !deadline.IsZero() {
			t = time.NewTimer(time.Until(deadline))
			expired = t.C
		}
		select {
		case r := <-done:
			if t != nil {
				t.Stop()
			}
			return r.n, r.err
		case <-changed:
			if t != nil {
				t.Stop()
			}
		case <-expired:
			s.mu.Lock()
			s.givenUp = true
			s.mu.Unlock()
			return 0, os.ErrDeadlineExceeded
		}
	}
}

// upstreamName is what the gateway accepts as an upstream's name.
var upstreamName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`)

// launchers run the program named by their first argument, which names
// the server better than they do.
var launchers = map[string]bool{
	"npx": true, "bunx": true, "pnpx": true, "uvx": true, "pipx": true, "uv": true, "node": true, "bun": true,
	"deno": true, "python": true, "python3": true, "docker": true, "podman": true, "go": true,
}

// wrapName is the default --name: the server's package or program name
// from the command (the package of npx/uvx/docker and the like, without
// scope, version or extension), else the URL's host, else "wrapped".
func wrapName(command []string, rawURL string) string {
	if rawURL != "" {
		if u, err := url.Parse(rawURL); err == nil && u.Hostname() != "" {
			return sanitizeName(u.Hostname())
		}
		return "wrapped"
	}
	if len(command) == 0 {
		return "wrapped"
	}
	prog := command[0]
	if launchers[filepath.Base(prog)] {
		prog = ""
		for _, a := range command[1:] {
			if strings.HasPrefix(a, "-") || a == "run" || a == "exec" || a == "x" {
				continue
			}
			prog = a
			break
		}
		if prog == "" {
			return "wrapped"
		}
		if i := strings.LastIndex(prog, "@"); i > 0 {
			prog = prog[:i] // a version: server-everything@2025.1.1
		}
	}
	base := filepath.Base(prog)
	for _, ext := range []string{".js", ".mjs", ".cjs", ".ts", ".py", ".exe"} {
		base = strings.TrimSuffix(base, ext)
	}
	return sanitizeName(base)
}

// sanitizeName makes s a valid upstream name, or "wrapped".
func sanitizeName(s string) string {
	s = strings.Map(func(r rune) rune {
		switch {
		case 'a' <= r && r <= 'z', 'A' <= r && r <= 'Z', '0' <= r && r <= '9', r == '.', r == '_', r == '-':
			return r
		}
		return '-'
	}, s)
	s = strings.TrimLeft(s, "._-")
	if s == "" {
		return "wrapped"
	}
	return s
}
