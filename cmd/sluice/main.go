// Command sluice is the Sluice governance gateway for AI agents.
//
//	sluice serve --config sluice.yaml        run the gateway
//	sluice wrap [--config f] -- cmd args...  govern a stdio MCP server, as a stdio server
//	sluice wrap --url http://host/mcp        govern an HTTP MCP server, as a stdio server
//	sluice demo                              run a governed demo with nothing else installed
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/sluicehq/sluice/gateway"
	"github.com/sluicehq/sluice/intercept"
	"github.com/sluicehq/sluice/inventory"
)

var _ intercept.ToolsObserver = (*inventory.Inventory)(nil)

const usage = `usage:
  sluice serve [--config sluice.yaml] [--listen addr]
  sluice wrap  [--config sluice.yaml] -- command [args...]
  sluice wrap  [--config sluice.yaml] --url http://host/mcp
  sluice demo  [--listen addr]
  sluice approvals list|approve|decline [ID] [--config sluice.yaml | --admin URL --token T] [--by NAME]
  sluice policy validate FILE | test DIR | explain --policy FILE --tool NAME [--args JSON] [--history t1,t2] [--agent A]
  sluice inventory list|diff|pin|approve [UPSTREAM [TOOL]] [--config sluice.yaml | --admin URL --token T]
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
	if cfg.Listen == "" {
		cfg.Listen = "127.0.0.1:8080"
	}
	opts := cfg.options()
	if host, _, _ := net.SplitHostPort(cfg.Listen); !isLoopback(host) && len(opts.AllowedHosts) == 0 {
		logger.Warn("listening beyond loopback with no allowed_hosts: Host header checks are off", "listen", cfg.Listen)
		opts.AllowedHosts = []string{"*"}
	}
	gv, err := buildGovernance(ctx, cfg, logger)
	if err != nil {
		return err
	}
	defer gv.close()
	opts.Tracer = gv.tp.Tracer()
	opts.Metrics = gv.tp.Metrics()
	opts.OnSessionEnd = gv.sessionEnded
	if cfg.Approvals.ClientMayAnswer {
		opts.Approver = gv.approvals // clients that can elicit approve held calls themselves
	}
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return err
	}
	g, err := gateway.New(opts, gv.ic, logger)
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
		h, err := adminHandler(cfg, gv, logger)
		if err != nil {
			srv.Close()
			return err
		}
		aln, err := net.Listen("tcp", cfg.AdminListen)
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
