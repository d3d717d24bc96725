package main

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// envDump is a stdio "server" that writes its environment to a FIFO, so
// the test reads it without waiting on a clock, and then keeps its
// stdin open until the gateway stops it.
type envDump struct{ fifo string }

func newEnvDump(t *testing.T) envDump {
	t.Helper()
	fifo := filepath.Join(t.TempDir(), "env")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	return envDump{fifo}
}

func (d envDump) script() string { return "env > " + d.fifo + "; exec cat >/dev/null" }

// read returns the environment the child wrote.
func (d envDump) read(t *testing.T) map[string]string {
	t.Helper()
	f, err := os.Open(d.fifo) // blocks until the child opens it
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b, err := io.ReadAll(f)
	if err != nil {
		t.Fatal(err)
	}
	env := map[string]string{}
	for _, kv := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		k, v, _ := strings.Cut(kv, "=")
		env[k] = v
	}
	return env
}

// setGatewaySecrets puts into the environment what a gateway's host
// holds and a stdio server must not read.
func setGatewaySecrets(t *testing.T) {
	t.Setenv("SLUICE_ADMIN_TOKEN", "admin-cli-secret")
	t.Setenv("ATK_ADMIN_TOKEN", "admin-secret-0123456789abcdef") // read by the config's ${VAR}
	t.Setenv("REDIS_PASSWORD", "redis-secret")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "cloud-secret")
	t.Setenv("ATK_PASSED", "by-pattern")
	t.Setenv("AWS_REGION", "eu-west-1")
}

// A stdio upstream sluice serve runs gets the SDKs' default set, its
// env, and what its inherit_env names, never the rest of the gateway's
// environment, nor through a pattern the variables the config reads.
func TestServeStdioUpstreamEnvironment(t *testing.T) {
	setGatewaySecrets(t)
	d := newEnvDump(t)
	yaml := `admin_token: ${ATK_ADMIN_TOKEN}
policy: {default: allow}
upstreams:
  - name: envdump
    command: /bin/sh
    args: ["-c", "` + d.script() + `"]
    inherit_env: ["ATK_*", AWS_REGION]
    env: {CONFIGURED: "yes"}
`
	cfg, err := parseConfig("test", []byte(yaml))
	if err != nil {
		t.Fatal(err)
	}
	cfg.Listen, cfg.AdminListen, cfg.DataDir = "127.0.0.1:0", "", t.TempDir()
	ctx, cancel := context.WithCancel(t.Context())
	addrc := make(chan bound, 1)
	served := make(chan error, 1)
	go func() { served <- serve(ctx, cfg, slog.New(slog.DiscardHandler), func(at bound) { addrc <- at }) }()
	defer func() { cancel(); <-served }()
	var at bound
	select {
	case at = <-addrc:
	case err := <-served:
		t.Fatalf("serve: %v", err)
	}
	// A session's initialize starts its child; the child never answers.
	go func() {
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+at.Listen+"/mcp/envdump",
			strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
		}
	}()
	env := d.read(t)
	for _, k := range []string{"SLUICE_ADMIN_TOKEN", "ATK_ADMIN_TOKEN", "REDIS_PASSWORD", "AWS_SECRET_ACCESS_KEY"} {
		if v, ok := env[k]; ok {
			t.Errorf("stdio upstream got %s=%q, want it not inherited", k, v)
		}
	}
	for k, want := range map[string]string{"CONFIGURED": "yes", "ATK_PASSED": "by-pattern", "AWS_REGION": "eu-west-1", "PATH": os.Getenv("PATH")} {
		if env[k] != want {
			t.Errorf("stdio upstream got %s=%q, want %q", k, env[k], want)
		}
	}
}

// sluice wrap passes the wrapped server the environment its client gave
// wrap, as the client would have given the server itself, but for what
// is Sluice's own: SLUICE_* and what its config reads.
func TestWrapServerEnvironment(t *testing.T) {
	setGatewaySecrets(t)
	d := newEnvDump(t)
	cfg := filepath.Join(t.TempDir(), "sluice.yaml")
	if err := os.WriteFile(cfg, []byte("admin_token: ${ATK_ADMIN_TOKEN}\npolicy: {default: allow}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("XDG_STATE_HOME", t.TempDir())
	inR, inW := io.Pipe()
	defer inW.Close()
	done := make(chan error, 1)
	go func() {
		done <- wrapIO(t.Context(), []string{"--config", cfg, "--admin-listen", "off", "--", "/bin/sh", "-c", d.script()}, inR, io.Discard, nil)
	}()
	go io.WriteString(inW, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`+"\n")
	env := d.read(t)
	for _, k := range []string{"SLUICE_ADMIN_TOKEN", "ATK_ADMIN_TOKEN"} {
		if v, ok := env[k]; ok {
			t.Errorf("wrapped server got %s=%q, want it withheld", k, v)
		}
	}
	for k, want := range map[string]string{"AWS_SECRET_ACCESS_KEY": "cloud-secret", "ATK_PASSED": "by-pattern", "PATH": os.Getenv("PATH")} {
		if env[k] != want {
			t.Errorf("wrapped server got %s=%q, want %q", k, env[k], want)
		}
	}
	inW.Close()
	<-done
}
