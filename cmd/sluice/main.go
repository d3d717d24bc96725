// Command sluice is the Sluice governance gateway for AI agents.
//
//	sluice serve --config sluice.yaml        run the gateway
//	sluice wrap [--name n] [--config f] -- cmd args...  govern a stdio MCP server, as a stdio server
//	sluice wrap --url http://host/mcp        govern an HTTP MCP server, as a stdio server
//	sluice demo                              run a governed demo with nothing else installed
//	sluice config validate sluice.yaml       check a whole config without binding anything
//
// `sluice --help` lists every verb; `sluice VERB --help` gives its flags.
// The verbs live in the table of cli.go.
package main

import (
	"cmp"
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/sluicehq/sluice/a2a"
	"github.com/sluicehq/sluice/auth"
	"github.com/sluicehq/sluice/gateway"
	"github.com/sluicehq/sluice/gateway/endfile"
	"github.com/sluicehq/sluice/gateway/redisstore"
	"github.com/sluicehq/sluice/intercept"
	"github.com/sluicehq/sluice/internal/gcfloor"
	"github.com/sluicehq/sluice/internal/govern"
	"github.com/sluicehq/sluice/inventory"
	"github.com/sluicehq/sluice/telemetry"
	"go.opentelemetry.io/otel"
)

var _ intercept.ToolsObserver = (*inventory.Inventory)(nil)
var _ intercept.ToolsPageObserver = (*inventory.Inventory)(nil)
var _ intercept.ListScreener = (*inventory.Inventory)(nil)
var _ intercept.ToolScreener = (*inventory.Inventory)(nil)
var _ govern.Withholder = (*inventory.Inventory)(nil)

func main() {
	// A hangup (the terminal closed, the ssh session dropped) ends sluice
	// as SIGTERM does, shutting down: its stdio servers are in process
	// groups of their own, which the terminal's SIGHUP does not reach, so
	// dying of it left them running (TestWrapHangupStopsServer).
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	rc := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(rc)
}

// logFlags adds --log-level and --log-format to fs; the function it
// returns builds the logger they describe, writing to stderr.
func logFlags(fs *flag.FlagSet) func() (*slog.Logger, error) {
	level := fs.String("log-level", "info", "least severe log level shown: debug, info, warn or error")
	format := fs.String("log-format", "text", "log format: text or json")
	return func() (*slog.Logger, error) {
		var l slog.Level
		if err := l.UnmarshalText([]byte(*level)); err != nil {
			return nil, usageErrorf("--log-level: %q is not debug, info, warn or error", *level)
		}
		return newLogger(os.Stderr, *format, l)
	}
}

// newLogger is the gateway's logger: format "text" or "json" to w, each
// string of a line bounded (telemetry.BoundHandler), since denied calls
// are logged with the tool name and agent the agent chose.
func newLogger(w io.Writer, format string, level slog.Level) (*slog.Logger, error) {
	o := &slog.HandlerOptions{Level: level}
	switch format {
	case "text":
		return slog.New(telemetry.BoundHandler(slog.NewTextHandler(w, o))), nil
	case "json":
		return slog.New(telemetry.BoundHandler(slog.NewJSONHandler(w, o))), nil
	}
	return nil, usageErrorf("--log-format: %q is not text or json", format)
}

func runServe(ctx context.Context, args []string, out io.Writer) error {
	fs := newFlagSet("serve")
	cfgPath := fs.String("config", "sluice.yaml", "config file")
	listen := fs.String("listen", "", "listen address (overrides the config's listen)")
	check := fs.Bool("check", false, "run every check of the config, print the warnings and exit, binding nothing")
	newLog := logFlags(fs)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageErrorf("serve: unexpected argument %q", fs.Arg(0))
	}
	logger, err := newLog()
	if err != nil {
		return err
	}
	otel.SetErrorHandler(otelErrors(logger))
	if !flagSet(fs, "config") {
		if _, err := os.Stat(*cfgPath); errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("serve: no --config given and there is no %s here: pass --config FILE (the README's Quickstart runs examples/sluice.yaml), or try `sluice demo`, which needs no config", *cfgPath)
		}
	}
	override := func(c *config) {
		if *listen != "" {
			c.Listen = *listen
		}
	}
	if *check {
		return validateConfig(*cfgPath, override, out)
	}
	cfg, err := loadConfig(*cfgPath)
	if err != nil {
		return err
	}
	override(cfg)
	return serve(ctx, cfg, logger, nil)
}

// bound is where serve's listeners are: the addresses they bound, so a
// config with port 0 learns its ports without a close-then-rebind race.
type bound struct {
	// Listen is the agents' listener, host:port.
	Listen string
	// Admin is the admin listener, host:port; empty without admin_listen.
	Admin string
}

// serve runs the gateway for cfg until ctx ends, then drains in-flight
// calls for up to the shutdown timeout. ready, if not nil, gets the
// listeners' addresses once both accept connections.
// defaultGCHeapFloor is gc_heap_floor_bytes's default.
const defaultGCHeapFloor = 64 << 20

// otelErrors is OpenTelemetry's error handler for the gateway's process:
// its exporters report their failures (a collector down or not
// answering) through it, by default as unstructured lines on stderr,
// which break a log read as JSON. Through the gateway's log instead.
func otelErrors(logger *slog.Logger) otel.ErrorHandler {
	return otel.ErrorHandlerFunc(func(err error) {
		logger.Warn("telemetry: export failed", "err", telemetry.Scrub(err.Error()))
	})
}

func serve(ctx context.Context, cfg *config, logger *slog.Logger, ready func(bound)) error {
	if cfg.Listen == "" {
		cfg.Listen = "127.0.0.1:8080"
	}
	ck, err := cfg.preflight()
	if err != nil {
		return err
	}
	if _, set := os.LookupEnv("GOGC"); !set {
		// Under load a small live heap is collected many times a
		// second; a floor under the collection target saves that CPU
		// for ~64 MiB of memory (README, gc_heap_floor_bytes).
		defer gcfloor.Start(uint64(cmp.Or(cfg.GCHeapFloorBytes, defaultGCHeapFloor)))()
	}
	for _, w := range ck.Warnings {
		logger.Warn(w)
	}
	opts := cfg.options()
	if err := checkIdentity(cfg, logger); err != nil {
		return err
	}
	if host, _, _ := net.SplitHostPort(cfg.Listen); !isLoopback(host) && len(opts.AllowedHosts) == 0 {
		logger.Warn("listening beyond loopback with no allowed_hosts: Host header checks are off", "listen", cfg.Listen)
		opts.AllowedHosts = []string{"*"}
	}
	gv, err := buildGovernance(ctx, cfg, logger)
	if err != nil {
		return err
	}
	var closeBy time.Time // the shutdown's deadline, once it began
	defer func() {
		if closeBy.IsZero() {
			// Returning on an error (start-up that failed, a listener
			// that died): the same bound from now. Without one, a
			// database another process held locked kept serve 10 s and
			// more in the audit store's last writes, a stalled disk for
			// ever, the signal that would stop it already spent.
			closeBy = time.Now().Add(shutdownTimeout(cfg))
		}
		cctx, cancel := closeWithin(closeBy)
		defer cancel()
		gv.close(cctx)
	}()
	if gv.rec != nil && gv.rec.store != nil {
		if gv.recommend, err = newRecommender(cfg, gv.rec.store); err != nil {
			return err
		}
		go gv.recommend.schedule(ctx, logger)
	}
	var tasks *loggedTasks
	if cfg.AgentTasks.RedisURL != "" {
		rt, err := newRedisTasks(ctx, cfg.AgentTasks)
		if err != nil {
			return err
		}
		defer rt.c.Close()
		tasks = &loggedTasks{s: rt, log: logger}
		gv.ic.Tasks = tasks // before the gateway serves: MCP tasks too
		// The same Redis shares what sealed sessions' exchanges leave
		// for one another (a resumed stream's requests, waiting ids); the
		// gateway asks it only for sealed sessions (session_keys).
		opts.Exchanges = redisstore.New(rt.c, redisstore.Options{KeyPrefix: rt.prefix + sessionKeyInfix, Timeout: rt.timeout})
	}
	if len(opts.SessionKeys) > 0 && opts.Exchanges == nil {
		// Sealed sessions outlive a restart: so must their ends, or a
		// restarted gateway serves an ended session's id again.
		dir, err := cfg.dataDir()
		if err != nil {
			return err
		}
		ends, err := endfile.Open(filepath.Join(dir, endfile.FileName))
		if err != nil {
			return err
		}
		defer ends.Close()
		opts.SessionEnds = ends
	}
	opts.Tracer = gv.tp.Tracer()
	opts.Metrics = gv.tp.Metrics()
	opts.OnSessionEnd = gv.sessionEnded
	opts.OnIdentityRefused = gv.rec.identityRefused
	opts.OnAggregateDropped = gv.rec.aggregateDropped
	if cfg.Approvals.ClientMayAnswer {
		opts.Approver = gv.approvals // clients that can elicit approve held calls themselves
	}
	ln, err := cfg.listener, error(nil)
	if ln == nil {
		ln, err = net.Listen("tcp", cfg.Listen)
	}
	if errors.Is(err, syscall.EADDRINUSE) {
		return fmt.Errorf("%w: another program (a gateway, `sluice demo`?) has %s; stop it, or pick another address with --listen or the config's listen (127.0.0.1:0 takes a free port)", err, cfg.Listen)
	}
	if err != nil {
		return err
	}
	pushRelayed := false // agents' pushes come to the relay, past authn
	// authn is made once the gateway is; a relay registered through
	// another replica asks it about the caller's API key, once serving.
	var authn *auth.Authenticator
	if len(cfg.Agents) > 0 {
		key, err := cfg.signingKey()
		if err != nil {
			ln.Close()
			return fmt.Errorf("agent card signing key: %w", err)
		}
		var shared a2a.TaskStore
		if tasks != nil {
			shared = tasks.s // a2a logs its store's failures itself
		}
		if key != nil && cfg.PublicURL == "" && slices.Contains(opts.AllowedHosts, "*") {
			logger.Warn("A2A cards are signed for whatever Host a request names (allowed_hosts admits any): set public_url to the gateway's URL")
		}
		relay, err := cfg.pushRelay()
		if err != nil {
			ln.Close()
			return err
		}
		ao := a2a.Options{Agents: cfg.Agents, AgentHeader: opts.AgentHeader, AgentHeaderRequired: opts.AgentHeaderRequired, TrustedProxies: cfg.trustedProxies, Logger: logger,
			HostAllowed:      func(h string) bool { return gateway.HostAllowed(opts.AllowedHosts, h) },
			CredentialsLapse: cfg.Auth != nil, // every principal's key, token or certificate can stop holding
			OnCardRefused:    gv.rec.cardRefused, SigningKey: key, Tasks: shared, PublicURL: cfg.PublicURL,
			OnPushRefused: gv.rec.pushRefused}
		cfg.withPushRelay(&ao, relay)
		var rt *redisTasks
		if tasks != nil {
			rt = tasks.s
		}
		if w := cfg.withSharedRelays(&ao, rt, func() *auth.Authenticator { return authn }); w != "" {
			logger.Warn(w)
		}
		ag, err := a2a.New(ao, gv.ic)
		if err != nil {
			ln.Close()
			return err
		}
		defer ag.Close() // at return: after the server has shut down
		pushRelayed = relay
		opts.Mount = map[string]http.Handler{"/a2a/": ag.Handler()}
	}
	g, err := gateway.New(opts, gv.ic, logger)
	if err != nil {
		ln.Close()
		return err
	}
	defer g.Close()
	authn, err = cfg.authenticator(ctx, gv.rec, logger)
	if err != nil {
		ln.Close()
		return err
	}
	tc, err := cfg.serverTLS()
	if err != nil {
		ln.Close()
		return err
	}
	if tc != nil {
		ln = tls.NewListener(ln, tc)
	}
	gh := g.Handler()
	handler := authn.Middleware(gh)
	if pushRelayed {
		handler = pushRelayOpen(gh, handler)
	}
	srv := &http.Server{Handler: handler, ReadHeaderTimeout: 10 * time.Second, TLSConfig: tc}
	srv.RegisterOnShutdown(g.Drain)
	errc := make(chan error, 2)
	go func() { errc <- srv.Serve(ln) }()
	at := bound{Listen: ln.Addr().String()}
	if cfg.AdminListen != "" {
		h, err := adminHandler(cfg, gv, logger)
		if err != nil {
			srv.Close()
			return err
		}
		aln, err := net.Listen("tcp", cfg.AdminListen)
		if errors.Is(err, syscall.EADDRINUSE) {
			srv.Close()
			return fmt.Errorf("admin_listen: %w: another program (a gateway with this config?) has %s; set another admin_listen (127.0.0.1:0 takes a free port)", err, cfg.AdminListen)
		}
		if err != nil {
			srv.Close()
			return fmt.Errorf("admin_listen: %w", err)
		}
		admin := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
		go func() {
			if err := admin.Serve(aln); !errors.Is(err, http.ErrServerClosed) {
				errc <- err
			}
		}()
		defer admin.Close()
		at.Admin = aln.Addr().String()
		logger.Info("admin API listening", "addr", at.Admin)
		if pickedPort(cfg.AdminListen) {
			defer announceAdmin(cfg, at.Admin, logger)()
		}
	}
	logger.Info("sluice listening", "addr", at.Listen, "upstreams", len(cfg.Upstreams))
	logSummary(logger, cfg, ck, cfg.Upstreams, at, tc != nil)
	if ready != nil {
		ready(at)
	}
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	timeout := shutdownTimeout(cfg)
	logger.Info("shutting down: draining in-flight calls", "timeout", timeout)
	sctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	closeBy = time.Now().Add(timeout)
	if err := srv.Shutdown(sctx); err != nil {
		logger.Warn("drain timed out; closing remaining connections", "err", err)
		srv.Close()
	}
	if err := <-errc; !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// defaultShutdownTimeout is shutdown_timeout's default.
const defaultShutdownTimeout = 15 * time.Second

// shutdownTimeout is cfg's shutdown_timeout, or its default.
func shutdownTimeout(cfg *config) time.Duration {
	if cfg.ShutdownTimeout > 0 {
		return cfg.ShutdownTimeout
	}
	return defaultShutdownTimeout
}

// closeGrace is the least time the audit store has to write what is
// queued once the gateway has stopped, however long the drain took: a
// healthy disk takes milliseconds.
const closeGrace = time.Second

// closeWithin is the context of the last writes at exit: until by (the
// end of shutdown_timeout), or closeGrace from now if that is later.
func closeWithin(by time.Time) (context.Context, context.CancelFunc) {
	if grace := time.Now().Add(closeGrace); grace.After(by) {
		by = grace
	}
	return context.WithDeadline(context.Background(), by)
}

// checkIdentity refuses to serve agents beyond loopback without an auth:
// section, and says at start-up where agent identity comes from.
func checkIdentity(cfg *config, logger *slog.Logger) error {
	if err := identityError(cfg); err != nil {
		return err
	}
	switch {
	case cfg.Auth == nil || cfg.Auth.Mode.Has(auth.ModeNone):
		args := []any{"listen", cfg.Listen, "route_memory", "one agent for every unauthenticated caller, whatever name it gives"}
		var byPrincipal []string
		for _, r := range cfg.RateLimits.Rules {
			if slices.Contains(r.By, "principal") {
				byPrincipal = append(byPrincipal, r.ID)
			}
		}
		if byPrincipal != nil {
			// A config written for agents naming themselves gets one
			// bucket where it may expect one per agent
			// (TestStartupSaysPrincipalRateLimitOneBucket).
			args = append(args, "rate_limits_by_principal", "one bucket for every unauthenticated caller, whatever name it gives (by: [client] is one per address): "+strings.Join(byPrincipal, ", "))
		}
		logger.Info("agent identity is self-declared (clientInfo, _meta or agent_header): no authentication configured", args...)
	default:
		logger.Info("agents authenticate", "modes", []string(cfg.Auth.Mode))
	}
	return nil
}

// identityError refuses a listen address beyond loopback without an
// auth: section.
func identityError(cfg *config) error {
	host, _, _ := net.SplitHostPort(cfg.listenAddr())
	if cfg.Auth == nil && !isLoopback(host) {
		return fmt.Errorf("listen %s is beyond loopback and the config has no auth: section, so any client could name itself any agent: "+
			"configure auth (mode api_key, jwt or mtls), or set auth: {mode: none} to accept self-declared identity on purpose", cfg.listenAddr())
	}
	return nil
}

// authenticator is the middleware of the auth: section; nil (no
// middleware) without one or with mode none.
func (c *config) authenticator(ctx context.Context, rec *recorder, logger *slog.Logger) (*auth.Authenticator, error) {
	if c.Auth == nil {
		return nil, nil
	}
	d := auth.Deps{}
	if rec != nil {
		d.OnFailure = rec.authFailure
	}
	if c.Auth.Mode.Has(auth.ModeAPIKey) {
		f, err := c.keyFile()
		if err != nil {
			return nil, err
		}
		d.KeyFile = f
	}
	// Protected resource metadata is served for each route and each
	// named virtual server, whose /mcp/{name}, /sse/{name} and /ws/{name}
	// the challenge names it for as well.
	for _, u := range c.Upstreams {
		d.Routes = append(d.Routes, u.Name)
	}
	for _, v := range c.VirtualServers {
		if v.Name != "" {
			d.Routes = append(d.Routes, v.Name)
		}
	}
	a, err := auth.New(*c.Auth, d)
	if err != nil {
		return nil, err
	}
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := a.Warm(wctx); err != nil {
		logger.Warn("the JWKS cannot be fetched yet; JWT requests are refused until it can", "jwks_url", c.Auth.JWT.JWKSURL, "err", err)
	}
	return a, nil
}

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
