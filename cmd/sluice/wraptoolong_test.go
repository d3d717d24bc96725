package main

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestWrapOversizedLineAnswered: a line from wrap's client longer than
// max_body_bytes ended the whole wrap (its server with it), so one
// oversized call from an agent ended a desktop client's server until the
// client restarted it. The line is now dropped unread and answered with
// an error naming the limit, and the session goes on.
func TestWrapOversizedLineAnswered(t *testing.T) {
	dir := buildWrap(t)
	cfg := filepath.Join(dir, "sluice.yaml")
	os.WriteFile(cfg, []byte("data_dir: "+filepath.Join(dir, "data")+"\nclassifier: {provider: off}\nmax_body_bytes: 4096\npolicy: {default: allow}\n"), 0o600)
	cmd := exec.Command(filepath.Join(dir, "sluice"), "wrap", "--config", cfg, "--admin-listen", "off", "--", filepath.Join(dir, "demo-server"))
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		stdin.Close()
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
		}
	}()
	lines := make(chan string, 16)
	go func() {
		sc := bufio.NewScanner(stdout)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	next := func(what string) string {
		t.Helper()
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatalf("%s: wrap's output ended", what)
			}
			return l
		case <-time.After(30 * time.Second):
			t.Fatalf("%s: no answer", what)
		}
		return ""
	}
	send := func(s string) {
		t.Helper()
		if _, err := stdin.Write([]byte(s + "\n")); err != nil {
			t.Fatalf("writing to wrap: %v", err)
		}
	}
	send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"desktop","version":"1"}}}`)
	if l := next("initialize"); !strings.Contains(l, `"id":1`) || !strings.Contains(l, `"result"`) {
		t.Fatalf("initialize: %s", l)
	}
	send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"message":"` + strings.Repeat("x", 10000) + `"}}}`)
	if l := next("the oversized call"); !strings.Contains(l, `"id":null`) || !strings.Contains(l, "4096 bytes") {
		t.Errorf("the oversized call: got %s, want an error with id null naming the limit", l)
	}
	send(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"echo","arguments":{"message":"still here"}}}`)
	if l := next("the next call"); !strings.Contains(l, `"id":3`) || !strings.Contains(l, "still here") {
		t.Errorf("the call after it: got %s, want the server's answer", l)
	}
}
