// Command sluice is the Sluice governance gateway for AI agents.
//
//	sluice serve --config sluice.yaml        run the gateway
//	sluice wrap [--config f] -- cmd args...  govern a stdio MCP server, as a stdio server
//	sluice wrap --url http://host/mcp        govern an HTTP MCP server, as a stdio server
//	sluice demo                              run a governed demo with nothing else installed
package main

import (
	"context"
	"crypto/subtle"
	"errors"
	"flag"
	"fmt"
	"log"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/sluicehq/sluice/approval"
	"github.com/sluicehq/sluice/audit"
	"github.com/sluicehq/sluice/gateway"
	"github.com/sluicehq/sluice/intercept"
	"github.com/sluicehq/sluice/internal/govern"
	"github.com/sluicehq/sluice/inventory"
	"github.com/sluicehq/sluice/telemetry"
)

var _ intercept.ToolsObserver = (*inventory.Inventory)(nil)

// bearer requires "Authorization: Bearer token" when token is set.
func bearer(token string, next http.Handler) http.Handler {
	if token == "" {
		return next
	}
	want := []byte("Bearer " + token)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if subtle.ConstantTimeCompare([]byte(r.Header.Get("Authorization")), want) != 1 {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusUnauthorized)
			fmt.Fprintln(w, `{"error":"missing or wrong bearer token"}`)
			return
		}
		next.ServeHTTP(w, r)
	})
}

const usage = `usage:
  sluice serve [--config sluice.yaml] [--listen addr]
  sluice wrap  [--config sluice.yaml] -- command [args...]
  sluice wrap  [--config sluice.yaml] --url http://host/mcp
  sluice demo  [--listen addr]
  sluice approvals list|approve|decline [ID] [--admin http://127.0.0.1:8081] [--by NAME]
  sluice policy validate FILE | test DIR | explain --policy FILE --tool NAME [--args JSON] [--history t1,t2] [--agent A]
  sluice inventory list|diff|pin|approve [UPSTREAM [TOOL]] [--admin URL]
  sluice events query|tail|export [--config f | --db path] [--agent A] [--tool T] [--decision D] [--since T] [--json]
  sluice replay --events DB|JSONL --policy FILE [--json]
  sluice bench [flags]
`

func main() {
	if len(os.Args) < 2 {
		fmt.Fprint(os.Stderr, usage)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var err error
	switch os.Args[1] {
	case "serve":
		err = runServe(ctx, os.Args[2:])
	case "wrap":
		err = runWrap(ctx, os.Args[2:])
	case "demo":
		err = runDemo(ctx, os.Args[2:])
	case "approvals":
		err = runApprovals(ctx, os.Args[2:], os.Stdout)
	case "replay":
		err = runReplay(ctx, os.Args[2:], os.Stdout, os.Stderr)
	case "events":
		err = runEvents(ctx, os.Args[2:], os.Stdout)
	case "policy":
		err = runPolicy(ctx, os.Args[2:], os.Stdout)
		if errors.Is(err, errFailed) {
			os.Exit(1)
		}
	case "inventory":
		err = runInventory(ctx, os.Args[2:], os.Stdout)
	case "bench":
		err = runBench(ctx, os.Args[2:])
	case "-h", "--help", "help":
		fmt.Print(usage)
		return
	default:
		fmt.Fprintf(os.Stderr, "sluice: unknown command %q\n%s", os.Args[1], usage)
		os.Exit(2)
	}
	if err != nil {
		log.Fatalf("sluice: %v", err)
	}
}

func newLogger() *slog.Logger {
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
}

func runServe(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("serve", flag.ExitOnError)
	cfgPath := fs.String("config", "sluice.yaml", "config file")
	listen := fs.String("listen", "", "listen address (overrides the config's listen)")
	_ = fs.Parse(args)
	cfg, err := loadConfig(*cfgPath)
	if err != nil {
		return err
	}
	if *listen != "" {
		cfg.Listen = *listen
	}
	return serve(ctx, cfg, newLogger(), nil)
}

// serve runs the gateway for cfg until ctx ends, then drains in-flight
// calls for up to the shutdown timeout. ready, if not nil, gets the
// listener's address once it accepts connections.
func serve(ctx context.Context, cfg *config, logger *slog.Logger, ready func(addr string)) error {
	dec, runPolicy, err := cfg.decider(logger)
	if err != nil {
		return err
	}
	pctx, stopPolicy := context.WithCancel(ctx)
	defer stopPolicy()
	go runPolicy(pctx)
	if cfg.Listen == "" {
		cfg.Listen = "127.0.0.1:8080"
	}
	opts := cfg.options()
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return err
	}
	if host, _, _ := net.SplitHostPort(cfg.Listen); !isLoopback(host) && len(opts.AllowedHosts) == 0 {
		logger.Warn("listening beyond loopback with no allowed_hosts: Host header checks are off", "listen", cfg.Listen)
		opts.AllowedHosts = []string{"*"}
	}
	dir, err := cfg.dataDir()
	if err != nil {
		return err
	}
	if err := cfg.Telemetry.Validate(); err != nil {
		return fmt.Errorf("telemetry: %w", err)
	}
	tp, err := telemetry.New(ctx, cfg.Telemetry)
	if err != nil {
		return fmt.Errorf("telemetry: %w", err)
	}
	defer func() {
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = tp.Shutdown(sctx)
	}()
	rec := &recorder{redact: cfg.Audit.Redactor, metrics: tp.Metrics(), log: logger}
	if !cfg.Audit.Off {
		store, err := audit.Open(filepath.Join(dir, audit.FileName), audit.Options{Depth: tp.Metrics()})
		if err != nil {
			return fmt.Errorf("audit: %w", err)
		}
		defer func() {
			if err := store.Close(); err != nil {
				logger.Error("audit: closing the event store", "err", err)
			}
		}()
		rec.store = store
	}
	inv, err := inventory.New(inventory.Options{
		Dir: dir, KeyFile: cfg.Inventory.KeyFile, Pinning: cfg.Inventory.Pinning, OnDrift: cfg.Inventory.OnDrift,
		MaxDescription: cfg.Inventory.MaxDescription,
		Events: inventory.EventFunc(func(e inventory.Event) {
			logger.Warn("inventory", "event", e.Type, "upstream", e.Upstream, "tool", e.Tool)
			rec.inventory(e)
		}),
	})
	if err != nil {
		return fmt.Errorf("inventory: %w", err)
	}
	approvals := approval.NewStore(approval.Options{Timeout: cfg.ApprovalTimeout, OnChange: func(r approval.Request) {
		logger.Info("approval", "id", r.ID, "status", r.Status, "tool", r.Tool, "agent", r.Agent, "txn_id", r.TxnID, "by", r.DecidedBy)
		rec.approval(r)
	}})
	adv, err := cfg.advisor(logger)
	if err != nil {
		return err
	}
	adv.Policy = dec
	logAdvice := adv.OnAdvice
	provider := cfg.Classifier.Provider
	if provider == "" {
		provider = "builtin"
	}
	adv.OnAdvice = func(a *govern.Advice) {
		if logAdvice != nil {
			logAdvice(a)
		}
		rec.advice(a, provider, cfg.Classifier.Profile)
	}
	ic := &intercept.Interceptor{Decider: &approval.Gate{Next: &govern.DriftGate{Next: adv, Inventory: inv}, Store: approvals}, Observer: inv, OnDecision: func(d *intercept.ActionDescriptor, dc intercept.Decision) {
		level := slog.LevelDebug // allows are routine; denials and holds are news
		if dc.Verdict != intercept.Allow {
			level = slog.LevelInfo
		}
		logger.Log(context.Background(), level, "decision", "txn_id", d.TxnID, "upstream", d.Upstream, "tool", d.ToolName, "agent", d.Agent,
			"session", d.SessionID, "decision", dc.Verdict, "reason", dc.Reason, "rule", dc.RuleID)
		rec.decision(d, dc, 0)
	}}
	g, err := gateway.New(opts, ic, logger)
	if err != nil {
		ln.Close()
		return err
	}
	defer g.Close()
	srv := &http.Server{Handler: g.Handler(), ReadHeaderTimeout: 10 * time.Second}
	srv.RegisterOnShutdown(g.Drain)
	errc := make(chan error, 2)
	go func() { errc <- srv.Serve(ln) }()
	if cfg.AdminListen != "" {
		aln, err := net.Listen("tcp", cfg.AdminListen)
		if err != nil {
			srv.Close()
			return fmt.Errorf("admin_listen: %w", err)
		}
		mux := http.NewServeMux()
		mux.Handle("/admin/approvals", approvals.Handler(""))
		mux.Handle("/admin/approvals/", approvals.Handler(""))
		mux.Handle("/admin/inventory", inventoryAdmin(inv))
		mux.Handle("/admin/inventory/", inventoryAdmin(inv))
		mux.Handle("/metrics", tp.MetricsHandler())
		admin := &http.Server{Handler: bearer(cfg.AdminToken, mux), ReadHeaderTimeout: 10 * time.Second}
		go func() {
			if err := admin.Serve(aln); !errors.Is(err, http.ErrServerClosed) {
				errc <- err
			}
		}()
		defer admin.Close()
		logger.Info("admin API listening", "addr", aln.Addr().String())
	}
	logger.Info("sluice listening", "addr", ln.Addr().String(), "upstreams", len(cfg.Upstreams))
	if ready != nil {
		ready(ln.Addr().String())
	}
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	timeout := cfg.ShutdownTimeout
	if timeout <= 0 {
		timeout = 15 * time.Second
	}
	logger.Info("shutting down: draining in-flight calls", "timeout", timeout)
	sctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		logger.Warn("drain timed out; closing remaining connections", "err", err)
		srv.Close()
	}
	if err := <-errc; !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
