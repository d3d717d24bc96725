package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
)

const testTimeout = 30 * time.Second

// binary is the demo-server built once for the tests that run it as a
// separate process; buildErr says why it is missing.
var binary, buildErr = "", error(nil)

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "demo-server-test")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binary, buildErr = build(dir)
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

func build(dir string) (string, error) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "demo-server")
	out, err := exec.Command(goTool, "build", "-o", bin, ".").CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("go build: %v\n%s", err, out)
	}
	return bin, nil
}

func needBinary(t *testing.T) string {
	t.Helper()
	if buildErr != nil {
		t.Fatalf("building demo-server: %v", buildErr)
	}
	return binary
}

func TestParseFlags(t *testing.T) {
	tests := []struct {
		args    []string
		want    config
		wantErr string
	}{
		{args: nil, want: config{transport: "stdio", addr: "127.0.0.1:3001"}},
		{args: []string{"-transport", "http"}, want: config{transport: "http", addr: "127.0.0.1:3001"}},
		{args: []string{"-transport", "http", "-addr", "127.0.0.1:0", "-json"},
			want: config{transport: "http", addr: "127.0.0.1:0", json: true}},
		{args: []string{"-transport", "sse"}, wantErr: `-transport "sse": want stdio or http`},
		{args: []string{"-json"}, wantErr: "-json applies only to -transport http"},
		{args: []string{"extra"}, wantErr: "unexpected arguments"},
		{args: []string{"-nope"}, wantErr: "flag provided but not defined"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			got, err := parseFlags(tt.args, io.Discard)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("parseFlags(%q) error = %v, want one containing %q", tt.args, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("parseFlags(%q): %v", tt.args, err)
			}
			if got != tt.want {
				t.Errorf("parseFlags(%q) = %+v, want %+v", tt.args, got, tt.want)
			}
		})
	}
	if _, err := parseFlags([]string{"-h"}, io.Discard); !errors.Is(err, flag.ErrHelp) {
		t.Errorf("parseFlags(-h) error = %v, want flag.ErrHelp", err)
	}
}

// progress collects the progress values of notifications/progress.
type progress struct {
	mu     sync.Mutex
	values []float64
}

func (p *progress) handle(n mcp.JSONRPCNotification) {
	if n.Method != string(mcp.MethodNotificationProgress) {
		return
	}
	v, _ := n.Params.AdditionalFields["progress"].(float64)
	p.mu.Lock()
	defer p.mu.Unlock()
	p.values = append(p.values, v)
}

func (p *progress) get() []float64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.values)
}

// exercise initializes c and checks the negotiated version, echo and
// slow_count with progress.
func exercise(t *testing.T, c *client.Client, wantVersion string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), testTimeout)
	defer cancel()

	if _, err := c.Initialize(ctx, mcp.InitializeRequest{Params: mcp.InitializeParams{
		ClientInfo: mcp.Implementation{Name: "demo-server-test", Version: "0.0.0"},
	}}); err != nil {
		t.Fatalf("Initialize: %v", err)
	}
	t.Logf("negotiated protocol version: %s", c.ProtocolVersion())
	if got := c.ProtocolVersion(); got != wantVersion {
		t.Errorf("protocol version = %q, want %q", got, wantVersion)
	}

	res, err := c.CallTool(ctx, mcp.CallToolRequest{Params: mcp.CallToolParams{
		Name: "echo", Arguments: map[string]any{"message": "over the wire"},
	}})
	if err != nil {
		t.Fatalf("echo: %v", err)
	}
	if got, want := text(t, res), "Echo: over the wire"; got != want {
		t.Errorf("echo = %q, want %q", got, want)
	}

	p := &progress{}
	c.OnNotification(p.handle)
	res, err = c.CallTool(ctx, mcp.CallToolRequest{Params: mcp.CallToolParams{
		Name: "slow_count", Arguments: map[string]any{"n": 3, "delay_ms": 10},
		Meta: &mcp.Meta{ProgressToken: "stdio-count"},
	}})
	if err != nil {
		t.Fatalf("slow_count: %v", err)
	}
	if got, want := text(t, res), "counted to 3"; got != want {
		t.Errorf("slow_count = %q, want %q", got, want)
	}
	if got, want := p.get(), []float64{1, 2, 3}; !slices.Equal(got, want) {
		t.Errorf("progress = %v, want %v", got, want)
	}
}

func text(t *testing.T, res *mcp.CallToolResult) string {
	t.Helper()
	if len(res.Content) != 1 {
		t.Fatalf("%d content items, want 1", len(res.Content))
	}
	tc, ok := mcp.AsTextContent(res.Content[0])
	if !ok {
		t.Fatalf("content %T, want text", res.Content[0])
	}
	return tc.Text
}

func TestStdio(t *testing.T) {
	bin := needBinary(t)
	tests := []struct {
		name        string
		opts        []client.ClientOption
		wantVersion string
	}{
		{"default", nil, mcp.ProtocolVersion20260728},
		{"pinned 2025-11-25", []client.ClientOption{client.WithProtocolVersion(mcp.ProtocolVersion20251125)}, mcp.ProtocolVersion20251125},
		{"pinned 2025-06-18", []client.ClientOption{client.WithProtocolVersion(mcp.ProtocolVersion20250618)}, mcp.ProtocolVersion20250618},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := client.NewClient(transport.NewStdio(bin, nil), tt.opts...)
			// Not the test's context: its cancellation would kill the
			// process before Close could check that it exits cleanly.
			if err := c.Start(context.Background()); err != nil {
				t.Fatalf("starting demo-server: %v", err)
			}
			exercise(t, c, tt.wantVersion)
			// Closing stdin must end the server with status 0.
			if err := c.Close(); err != nil {
				t.Errorf("Close: %v", err)
			}
		})
	}
}

func TestHTTP(t *testing.T) {
	bin := needBinary(t)
	for _, args := range [][]string{{}, {"-json"}} {
		t.Run(strings.Join(append([]string{"http"}, args...), " "), func(t *testing.T) {
			cmd := exec.Command(bin, append([]string{"-transport", "http", "-addr", "127.0.0.1:0"}, args...)...)
			stderr, err := cmd.StderrPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatalf("starting demo-server: %v", err)
			}
			exited := make(chan error, 1)
			reaped := false // cleanups run on the test's goroutine
			t.Cleanup(func() {
				if !reaped {
					_ = cmd.Process.Kill()
					<-exited
				}
			})

			lines := make(chan string, 1)
			go func() {
				sc := bufio.NewScanner(stderr)
				if sc.Scan() {
					lines <- sc.Text()
				}
				close(lines)
				_, _ = io.Copy(io.Discard, stderr)
				exited <- cmd.Wait()
			}()
			var line string
			select {
			case line = <-lines:
			case <-time.After(testTimeout):
				t.Fatal("no listening line on stderr")
			}
			url, ok := strings.CutPrefix(line, "demo-server listening on ")
			if !ok || !strings.HasPrefix(url, "http://127.0.0.1:") || !strings.HasSuffix(url, "/mcp") {
				t.Fatalf("stderr line %q, want \"demo-server listening on http://127.0.0.1:PORT/mcp\"", line)
			}

			trans, err := transport.NewStreamableHTTP(url)
			if err != nil {
				t.Fatal(err)
			}
			c := client.NewClient(trans)
			if err := c.Start(t.Context()); err != nil {
				t.Fatal(err)
			}
			if slices.Contains(args, "-json") {
				// No stream to carry progress: check only the basics.
				ctx, cancel := context.WithTimeout(t.Context(), testTimeout)
				defer cancel()
				if _, err := c.Initialize(ctx, mcp.InitializeRequest{}); err != nil {
					t.Fatalf("Initialize: %v", err)
				}
				res, err := c.CallTool(ctx, mcp.CallToolRequest{Params: mcp.CallToolParams{
					Name: "add", Arguments: map[string]any{"a": 40, "b": 2},
				}})
				if err != nil {
					t.Fatalf("add: %v", err)
				}
				if got := text(t, res); got != "42" {
					t.Errorf("add = %q, want %q", got, "42")
				}
			} else {
				exercise(t, c, mcp.ProtocolVersion20260728)
			}
			_ = c.Close()

			if err := cmd.Process.Signal(os.Interrupt); err != nil {
				t.Fatal(err)
			}
			select {
			case err := <-exited:
				reaped = true
				if err != nil {
					t.Errorf("demo-server exit: %v, want status 0", err)
				}
			case <-time.After(testTimeout):
				t.Fatal("demo-server did not exit on SIGINT")
			}
		})
	}
}
