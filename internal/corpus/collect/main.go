// Command collect runs real MCP servers and records their tools/list
// replies verbatim for the classifier corpus (classifier/testdata/corpus).
//
// Each server is described by a file servers/ID.json whose "spec" says how
// to start it; collect fills in "recorded" (the initialize result's
// serverInfo and protocol version, and every tool of every tools/list page,
// byte for byte as the server sent it) and leaves the spec unchanged:
//
//	go run ./internal/corpus/collect [-j 4] [-timeout 3m] classifier/testdata/corpus/servers/*.json
//
// A spec:
//
//	{"spec": {
//	  "id": "github",                       // the file's name without .json
//	  "source": "npm:@modelcontextprotocol/server-github@2025.4.8",
//	  "command": ["npx", "-y", "@modelcontextprotocol/server-github@2025.4.8"],
//	  "env": {"GITHUB_PERSONAL_ACCESS_TOKEN": "placeholder"},
//	  "service": "GitHub",                  // what it fronts, for the labeller
//	  "kind": "official",                   // official, vendor or community
//	  "batch": "2026-11-29"                 // optional: added together, scored once
//	}}
//
// Servers run over stdio in a fresh temporary directory with HOME set to it,
// so nothing they write lands in the repository. Credentials are
// placeholders: only tools/list is called, never a tool.
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"
)

type spec struct {
	ID      string            `json:"id"`
	Source  string            `json:"source"`
	Command []string          `json:"command"`
	Env     map[string]string `json:"env,omitempty"`
	Service string            `json:"service,omitempty"`
	Kind    string            `json:"kind,omitempty"`
	Notes   string            `json:"notes,omitempty"`
	Batch   string            `json:"batch,omitempty"`
}

type recorded struct {
	At              string            `json:"at"`
	ProtocolVersion string            `json:"protocol_version"`
	ServerInfo      json.RawMessage   `json:"server_info,omitempty"`
	Instructions    string            `json:"instructions,omitempty"`
	Tools           []json.RawMessage `json:"tools"`
}

type file struct {
	Spec     spec      `json:"spec"`
	Recorded *recorded `json:"recorded,omitempty"`
}

func main() {
	jobs := flag.Int("j", 4, "servers run at once")
	timeout := flag.Duration("timeout", 3*time.Minute, "per server: install, start and list")
	force := flag.Bool("f", false, "record again servers that already have a recording")
	flag.Parse()
	if flag.NArg() == 0 {
		fmt.Fprintln(os.Stderr, "usage: collect [-j N] [-timeout D] [-f] servers/ID.json ...")
		os.Exit(2)
	}
	sem := make(chan struct{}, *jobs)
	var wg sync.WaitGroup
	var mu sync.Mutex
	failed := 0
	for _, path := range flag.Args() {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			n, err := collectFile(path, *timeout, *force)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err != nil:
				failed++
				fmt.Printf("FAIL %s: %v\n", path, err)
			case n < 0:
				fmt.Printf("skip %s (already recorded; -f to record again)\n", path)
			default:
				fmt.Printf("ok   %s: %d tools\n", path, n)
			}
		}()
	}
	wg.Wait()
	if failed > 0 {
		os.Exit(1)
	}
}

func collectFile(path string, timeout time.Duration, force bool) (int, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	var f file
	if err := json.Unmarshal(b, &f); err != nil {
		return 0, fmt.Errorf("not a server file: %w", err)
	}
	if want := strings.TrimSuffix(filepath.Base(path), ".json"); f.Spec.ID != want {
		return 0, fmt.Errorf("spec.id is %q, want %q (the file's name)", f.Spec.ID, want)
	}
	if len(f.Spec.Command) == 0 {
		return 0, errors.New("spec.command is empty")
	}
	if f.Recorded != nil && !force {
		return -1, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	corpus, err := filepath.Abs(filepath.Dir(filepath.Dir(path)))
	if err != nil {
		return 0, err
	}
	rec, err := list(ctx, f.Spec, corpus)
	if err != nil {
		return 0, err
	}
	f.Recorded = rec
	out, err := json.MarshalIndent(f, "", " ")
	if err != nil {
		return 0, err
	}
	return len(rec.Tools), os.WriteFile(path, append(out, '\n'), 0o644)
}

// list starts the server, initializes, and pages through tools/list.
// ${CORPUS} in an env value is the corpus directory (the one holding
// servers/), so a spec can point at a placeholder file kept there, such
// as KUBECONFIG=${CORPUS}/fixtures/kubeconfig.
func list(ctx context.Context, s spec, corpus string) (*recorded, error) {
	dir, err := os.MkdirTemp("", "corpus-"+s.ID+"-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	cmd := exec.CommandContext(ctx, s.Command[0], s.Command[1:]...)
	cmd.Dir = dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	home, _ := os.UserHomeDir()
	cmd.Env = []string{
		"PATH=" + os.Getenv("PATH"), "HOME=" + dir, "TMPDIR=" + os.TempDir(),
		"npm_config_cache=" + filepath.Join(home, ".npm"), // share the npm cache, not the home
		"GOPATH=" + os.Getenv("GOPATH"), "GOMODCACHE=" + goEnv("GOMODCACHE"), "GOCACHE=" + goEnv("GOCACHE"),
		"GOPROXY=" + goEnv("GOPROXY"), "GOFLAGS=-mod=mod", "NO_COLOR=1", "CI=true",
	}
	keys := make([]string, 0, len(s.Env))
	for k := range s.Env {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		cmd.Env = append(cmd.Env, k+"="+strings.ReplaceAll(s.Env[k], "${CORPUS}", corpus))
	}
	var stderr tail
	cmd.Stderr = &stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	defer func() {
		stdin.Close()
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(3 * time.Second):
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-done
		}
	}()
	c := &client{in: stdin, out: bufio.NewReaderSize(stdout, 1<<20)}
	fail := func(err error) (*recorded, error) {
		if ctx.Err() != nil {
			err = fmt.Errorf("%w (timed out)", err)
		}
		return nil, fmt.Errorf("%w; stderr: %s", err, stderr.String())
	}
	type res struct {
		v   json.RawMessage
		err error
	}
	call := func(method string, params any) (json.RawMessage, error) {
		ch := make(chan res, 1)
		go func() { v, err := c.call(method, params); ch <- res{v, err} }()
		select {
		case r := <-ch:
			return r.v, r.err
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	init, err := call("initialize", map[string]any{
		"protocolVersion": "2025-06-18",
		"capabilities":    map[string]any{},
		"clientInfo":      map[string]any{"name": "sluice-corpus", "version": "1"},
	})
	if err != nil {
		return fail(fmt.Errorf("initialize: %w", err))
	}
	var ir struct {
		ProtocolVersion string          `json:"protocolVersion"`
		ServerInfo      json.RawMessage `json:"serverInfo"`
		Instructions    string          `json:"instructions"`
	}
	_ = json.Unmarshal(init, &ir)
	if err := c.send(map[string]any{"jsonrpc": "2.0", "method": "notifications/initialized"}); err != nil {
		return fail(err)
	}
	rec := &recorded{At: time.Now().UTC().Format(time.DateOnly), ProtocolVersion: ir.ProtocolVersion, ServerInfo: ir.ServerInfo, Instructions: ir.Instructions, Tools: []json.RawMessage{}}
	cursor := ""
	for page := 0; page < 100; page++ {
		params := map[string]any{}
		if cursor != "" {
			params["cursor"] = cursor
		}
		v, err := call("tools/list", params)
		if err != nil {
			return fail(fmt.Errorf("tools/list: %w", err))
		}
		var lr struct {
			Tools      []json.RawMessage `json:"tools"`
			NextCursor string            `json:"nextCursor"`
		}
		if err := json.Unmarshal(v, &lr); err != nil {
			return fail(fmt.Errorf("tools/list result: %w", err))
		}
		rec.Tools = append(rec.Tools, lr.Tools...)
		if lr.NextCursor == "" {
			return rec, nil
		}
		cursor = lr.NextCursor
	}
	return fail(errors.New("tools/list: more than 100 pages"))
}

type client struct {
	mu  sync.Mutex
	in  io.Writer
	out *bufio.Reader
	id  int
}

func (c *client) send(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	_, err = c.in.Write(append(b, '\n'))
	return err
}

// call sends a request and reads lines until its answer, answering the
// server's own requests (roots/list and the like) with empty results or
// method-not-found and skipping notifications and non-JSON log lines.
func (c *client) call(method string, params any) (json.RawMessage, error) {
	c.id++
	id := c.id
	if err := c.send(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params}); err != nil {
		return nil, err
	}
	for {
		line, err := c.out.ReadBytes('\n')
		if len(bytes.TrimSpace(line)) == 0 && err != nil {
			return nil, fmt.Errorf("server closed stdout: %w", err)
		}
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Result json.RawMessage `json:"result"`
			Error  *struct {
				Code    int    `json:"code"`
				Message string `json:"message"`
			} `json:"error"`
		}
		if json.Unmarshal(bytes.TrimSpace(line), &m) != nil {
			continue // a log line on stdout
		}
		switch {
		case m.Method != "" && len(m.ID) > 0:
			reply := map[string]any{"jsonrpc": "2.0", "id": m.ID}
			if m.Method == "roots/list" {
				reply["result"] = map[string]any{"roots": []any{}}
			} else if m.Method == "ping" {
				reply["result"] = map[string]any{}
			} else {
				reply["error"] = map[string]any{"code": -32601, "message": "method not found"}
			}
			if err := c.send(reply); err != nil {
				return nil, err
			}
		case m.Method != "":
		case string(m.ID) == fmt.Sprint(id):
			if m.Error != nil {
				return nil, fmt.Errorf("error %d: %s", m.Error.Code, m.Error.Message)
			}
			return m.Result, nil
		}
	}
}

// tail keeps the last 2 KiB written to it.
type tail struct {
	mu sync.Mutex
	b  []byte
}

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if len(t.b) > 2048 {
		t.b = t.b[len(t.b)-2048:]
	}
	return len(p), nil
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return strings.TrimSpace(string(t.b))
}

func goEnv(k string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	out, _ := exec.Command("go", "env", k).Output()
	return strings.TrimSpace(string(out))
}
