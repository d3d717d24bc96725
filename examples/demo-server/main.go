// Command demo-server is a small MCP server for trying Sluice out: the
// quickstart and the end-to-end tests put it behind the gateway.
//
//	demo-server                                  # stdio
//	demo-server -transport http -addr 127.0.0.1:3001
//	demo-server -transport http -json            # no SSE, plain JSON bodies
//
// The tools and both protocol eras are described in package demo.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/mark3labs/mcp-go/server"

	"github.com/sluicehq/sluice/examples/demo-server/demo"
)

// config is what the command line asks for.
type config struct {
	transport string
	addr      string
	json      bool
}

func parseFlags(args []string, stderr io.Writer) (config, error) {
	var c config
	fs := flag.NewFlagSet("demo-server", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&c.transport, "transport", "stdio", "transport to serve: stdio or http")
	fs.StringVar(&c.addr, "addr", "127.0.0.1:3001", "listen address in http mode; Streamable HTTP is served at /mcp")
	fs.BoolVar(&c.json, "json", false, "http mode: answer POSTs with a single JSON body, never an SSE stream")
	if err := fs.Parse(args); err != nil {
		return config{}, err
	}
	if fs.NArg() > 0 {
		return config{}, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	switch c.transport {
	case "stdio":
		if c.json {
			return config{}, errors.New("-json applies only to -transport http")
		}
	case "http":
	default:
		return config{}, fmt.Errorf("-transport %q: want stdio or http", c.transport)
	}
	return c, nil
}

func main() {
	log.SetFlags(0)
	log.SetPrefix("demo-server: ")
	cfg, err := parseFlags(os.Args[1:], os.Stderr)
	if errors.Is(err, flag.ErrHelp) {
		return
	}
	if err != nil {
		log.Fatal(err)
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	s := demo.NewServer(demo.Options{})
	switch cfg.transport {
	case "stdio":
		err = serveStdio(ctx, s)
	case "http":
		err = serveHTTP(ctx, s, cfg)
	}
	if err != nil {
		log.Fatal(err)
	}
}

func serveStdio(ctx context.Context, s *server.MCPServer) error {
	stdio := server.NewStdioServer(s)
	// stdout carries the protocol, so diagnostics go to stderr.
	stdio.SetErrorLogger(log.New(os.Stderr, "demo-server: ", 0))
	err := stdio.Listen(ctx, os.Stdin, os.Stdout)
	if err == nil || errors.Is(err, context.Canceled) || errors.Is(err, io.EOF) {
		return nil
	}
	return err
}

func serveHTTP(ctx context.Context, s *server.MCPServer, cfg config) error {
	mux := http.NewServeMux()
	mux.Handle("/mcp", demo.NewHTTPHandler(s, demo.HTTPOptions{JSONResponse: cfg.json}))
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}

	ln, err := net.Listen("tcp", cfg.addr)
	if err != nil {
		return err
	}
	// Printed only once the socket accepts connections, so that scripts and
	// tests can wait for this line instead of polling the port.
	fmt.Fprintf(os.Stderr, "demo-server listening on http://%s/mcp\n", ln.Addr())

	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}

	// Legacy clients may hold a GET stream open for as long as they like, so
	// a graceful shutdown gets a short grace period and then connections are
	// cut.
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil {
		_ = srv.Close()
	}
	if err := <-errc; !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
