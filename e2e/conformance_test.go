package e2e

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestConformanceThroughDefaultAllow runs the official MCP conformance
// suite (@modelcontextprotocol/conformance, every server scenario of a
// spec version: --suite all) against the go-sdk's reference
// everything-server, directly and through `sluice serve` whose config
// says only `policy: {default: allow}`: the 2025-11-25 suite against a
// stateful server, the 2026-07-28 suite against a stateless one. Such a
// gateway is transparent: the scenarios that pass through it are exactly
// those that pass directly.
func TestConformanceThroughDefaultAllow(t *testing.T) {
	requireConformance(t)
	bin := buildBinaries(t)
	suites := []struct {
		version, upstream string
		stateless         bool
	}{
		{"2025-11-25", "everything-2025", false},
		{"2026-07-28", "everything-2026", true},
	}
	direct := map[string]string{}
	var ups strings.Builder
	for _, s := range suites {
		direct[s.version] = startEverything(t, bin, s.stateless)
		fmt.Fprintf(&ups, "  - {name: %s, url: '%s'}\n", s.upstream, direct[s.version])
	}
	gw := startSluice(t, bin, "policy: {default: allow}\nupstreams:\n"+ups.String())
	for _, s := range suites {
		t.Run(s.version, func(t *testing.T) {
			want := runConformance(t, direct[s.version], s.version)
			got := runConformance(t, gw+"/mcp/"+s.upstream, s.version)
			t.Logf("%s: %d of %d scenarios pass directly, %d of %d through Sluice", s.version, len(passing(want)), len(want), len(passing(got)), len(got))
			if len(passing(want)) == 0 {
				t.Fatalf("no scenario passes directly: %v", want)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("scenario outcomes through Sluice differ from direct (-direct +through):\n%s", diff)
			}
		})
	}
}

func requireConformance(t *testing.T) {
	t.Helper()
	if runtime.GOOS != "linux" {
		t.Skip("finds the everything-server's port through /proc")
	}
	if _, err := os.Stat("node_modules/@modelcontextprotocol/conformance"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("node_modules missing under CI: run npm ci in e2e/ (%v)", err)
		}
		t.Skip("node_modules missing: run `npm ci` in e2e/ to enable the conformance test")
	}
}

// buildBinaries builds sluice and the go-sdk's conformance
// everything-server (a module Sluice already requires) into a temporary
// directory and returns it.
func buildBinaries(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", "build", "-o", dir+string(filepath.Separator),
		"github.com/sluicehq/sluice/cmd/sluice", "github.com/modelcontextprotocol/go-sdk/conformance/everything-server")
	cmd.Dir = ".."
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return dir
}

// startEverything runs the everything-server on a port the kernel picks
// and returns its URL.
func startEverything(t *testing.T, bin string, stateless bool) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, filepath.Join(bin, "everything-server"), "-http=127.0.0.1:0", "-stateless="+strconv.FormatBool(stateless))
	if err := cmd.Start(); err != nil {
		cancel()
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() { cancel(); <-exited })
	// The server logs the address it was given, not the port it got: ask
	// the kernel which socket of the process listens.
	deadline := time.Now().Add(30 * time.Second)
	for {
		if port, ok := listeningPort(cmd.Process.Pid); ok {
			return fmt.Sprintf("http://127.0.0.1:%d", port)
		}
		select {
		case <-exited:
			t.Fatal("everything-server exited before it listened")
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatal("everything-server did not listen within 30s")
		}
	}
}

// listeningPort returns the port of a TCP socket process pid listens on:
// its socket file descriptors matched against the LISTEN entries of
// /proc/PID/net/tcp and tcp6.
func listeningPort(pid int) (int, bool) {
	fdDir := fmt.Sprintf("/proc/%d/fd", pid)
	fds, err := os.ReadDir(fdDir)
	if err != nil {
		return 0, false
	}
	inodes := map[string]bool{}
	for _, fd := range fds {
		link, _ := os.Readlink(filepath.Join(fdDir, fd.Name()))
		if inode, ok := strings.CutPrefix(link, "socket:["); ok {
			inodes[strings.TrimSuffix(inode, "]")] = true
		}
	}
	for _, table := range []string{"tcp", "tcp6"} {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/net/%s", pid, table))
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(b), "\n") {
			f := strings.Fields(line)
			const listen = "0A"
			if len(f) < 10 || f[3] != listen || !inodes[f[9]] {
				continue
			}
			_, hexPort, _ := strings.Cut(f[1], ":")
			if port, err := strconv.ParseUint(hexPort, 16, 16); err == nil {
				return int(port), true
			}
		}
	}
	return 0, false
}

// startSluice runs `sluice serve` with config (listen and data_dir added)
// and returns its base URL, read from its "sluice listening" log line.
func startSluice(t *testing.T, bin, config string) string {
	t.Helper()
	dir := t.TempDir()
	path := filepath.Join(dir, "sluice.yaml")
	config = "listen: 127.0.0.1:0\ndata_dir: " + filepath.Join(dir, "data") + "\n" + config
	if err := os.WriteFile(path, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	return startServeFile(t, bin, path)
}

// startServeFile runs `sluice serve --config path` and returns its base
// URL, read from its "sluice listening" log line.
func startServeFile(t *testing.T, bin, path string) string {
	t.Helper()
	base, _ := startServeFileAdmin(t, bin, path)
	return base
}

// startServeFileAdmin is startServeFile also returning the admin API's
// base URL, read from its "admin API listening" log line, logged before
// the other; "" if the config has no admin_listen.
func startServeFileAdmin(t *testing.T, bin, path string) (base, admin string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, filepath.Join(bin, "sluice"), "serve", "--config", path)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		cancel()
		t.Fatal(err)
	}
	type addrs struct{ base, admin string }
	found := make(chan addrs, 1)
	read := make(chan []string, 1)
	go func() {
		var log []string
		var admin string
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			line := sc.Text()
			log = append(log, line)
			if addr, ok := loggedAddr(line, "admin API listening"); ok {
				admin = "http://" + addr
			}
			if addr, ok := listeningAddr(line); ok {
				found <- addrs{"http://" + addr, admin}
			}
		}
		close(found)
		read <- log
	}()
	t.Cleanup(func() {
		cancel()
		log := <-read // stderr is read to its end before Wait closes it
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("sluice log:\n%s", lastLines(strings.Join(log, "\n"), 60))
		}
	})
	select {
	case a, ok := <-found:
		if !ok {
			t.Fatal("sluice exited before it listened")
		}
		return a.base, a.admin
	case <-time.After(time.Minute):
		t.Fatal("sluice did not listen within a minute")
		return "", ""
	}
}

// listeningAddr reads the address from serve's "sluice listening" line.
func listeningAddr(line string) (string, bool) {
	return loggedAddr(line, "sluice listening")
}

// loggedAddr reads the address from serve's log line with message msg.
func loggedAddr(line, msg string) (string, bool) {
	if !strings.Contains(line, `msg="`+msg+`"`) {
		return "", false
	}
	for _, f := range strings.Fields(line) {
		if addr, ok := strings.CutPrefix(f, "addr="); ok {
			return addr, true
		}
	}
	return "", false
}

// runConformance runs every server scenario of spec version against url
// and returns whether each passed (all its checks), by scenario name.
func runConformance(t *testing.T, url, version string) map[string]bool {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	// globsync.mjs lets the package load on Node 20.
	cmd := exec.CommandContext(ctx, "node", "--import", "./globsync.mjs", "node_modules/@modelcontextprotocol/conformance/dist/index.js",
		"server", "--url", url, "--spec-version", version, "--suite", "all", "--output-dir", t.TempDir())
	out, err := cmd.Output() // exits non-zero when a scenario fails
	summary := string(out)
	i := strings.LastIndex(summary, "=== SUMMARY ===")
	if i >= 0 {
		summary = summary[i:]
	}
	results := map[string]bool{}
	for _, line := range strings.Split(summary, "\n") {
		mark, rest, ok := strings.Cut(line, " ")
		name, counts, ok2 := strings.Cut(rest, ": ")
		if !ok || !ok2 || !strings.Contains(counts, " passed, ") {
			continue
		}
		results[name] = mark == "✓" && strings.HasSuffix(counts, " 0 failed")
	}
	if i < 0 || len(results) == 0 {
		var stderr string
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = string(ee.Stderr)
		}
		t.Fatalf("conformance %s against %s: %v, no summary in\n%s\nstderr:\n%s", version, url, err, lastLines(string(out), 40), lastLines(stderr, 40))
	}
	return results
}

// passing returns the names of the scenarios that passed.
func passing(results map[string]bool) []string {
	var names []string
	for name, ok := range results {
		if ok {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	return names
}
