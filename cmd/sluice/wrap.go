package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"time"

	"github.com/sluicehq/sluice/gateway"
	"github.com/sluicehq/sluice/gateway/transport"
)

// runWrap makes Sluice a stdio MCP server in front of one upstream, so a
// desktop client's config changes only its command.
func runWrap(ctx context.Context, args []string) error {
	fs := newFlagSet("wrap")
	cfgPath := fs.String("config", "", "config file with the policy (optional; without one every tools/call is denied)")
	rawURL := fs.String("url", "", "URL of a Streamable HTTP upstream (instead of a command)")
	transportName := fs.String("transport", "", "upstream transport for --url: streamable-http (default), sse or websocket")
	newLog := logFlags(fs)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	logger, err := newLog()
	if err != nil {
		return err
	}
	cfg := &config{}
	if *cfgPath != "" {
		if cfg, err = loadConfig(*cfgPath); err != nil {
			return err
		}
	}
	if cfg.AgentHeaderRequired {
		return errors.New("wrap: agent_header_required cannot be met over stdio, which carries no headers; use a config without it for wrap")
	}
	up := gateway.Upstream{Name: "wrapped", URL: *rawURL, Transport: gateway.Transport(*transportName)}
	switch {
	case *rawURL != "" && fs.NArg() > 0:
		return usageErrorf("wrap: give either --url or a command after --, not both")
	case *rawURL == "" && fs.NArg() == 0:
		return usageErrorf("wrap: give a command after -- or --url")
	case fs.NArg() > 0:
		up.Command, up.Args = fs.Arg(0), fs.Args()[1:]
	}
	gv, err := buildGovernance(ctx, cfg, logger)
	if err != nil {
		return err
	}
	defer gv.close()
	if cfg.AdminListen != "" {
		// Approvals and inventory reviews need the admin API here too.
		h, err := adminHandler(cfg, gv, logger)
		if err != nil {
			return err
		}
		admin := &http.Server{Addr: cfg.AdminListen, Handler: h, ReadHeaderTimeout: 10 * time.Second}
		go admin.ListenAndServe()
		defer admin.Close()
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
	err = g.ServeConn(ctx, up.Name, transport.NewStdioConn(os.Stdin, os.Stdout))
	if err == nil || errors.Is(err, io.EOF) || errors.Is(err, context.Canceled) || errors.Is(err, transport.ErrClosed) {
		return nil
	}
	return fmt.Errorf("wrap: %w", err)
}
