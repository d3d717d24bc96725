package main

import (
	"bufio"
	"os/exec"
	"path/filepath"
	"regexp"
	"testing"
	"time"
)

// buildSluice builds the sluice binary into a temporary directory and
// returns its path.
func buildSluice(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds and runs the sluice binary")
	}
	bin := filepath.Join(t.TempDir(), "sluice")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// child is a `sluice serve` process.
type child struct {
	cmd             *exec.Cmd
	listen, adminAt string      // the addresses it bound; adminAt empty without an admin listener
	logs            *syncBuffer // its stderr
	exited          chan struct{}
}

// startChild runs `bin serve --config cfgPath`, killed at the test's end,
// and waits until it listens (and its admin API, when admin is true).
func startChild(t *testing.T, bin, cfgPath string, admin bool) *child {
	t.Helper()
	c := &child{cmd: exec.Command(bin, "serve", "--config", cfgPath), logs: &syncBuffer{}, exited: make(chan struct{})}
	stderr, err := c.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := c.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		c.cmd.Process.Kill()
		<-c.exited
	})
	ready := make(chan [2]string, 1)
	go func() {
		defer close(c.exited)
		defer c.cmd.Wait()
		sc := bufio.NewScanner(stderr)
		listening := regexp.MustCompile(`msg="sluice listening" addr=(\S+)`)
		adminAt := regexp.MustCompile(`msg="admin API listening" addr=(\S+)`)
		var at [2]string
		for sc.Scan() {
			c.logs.Write(append(sc.Bytes(), '\n'))
			if m := adminAt.FindStringSubmatch(sc.Text()); m != nil {
				at[1] = m[1]
			}
			if m := listening.FindStringSubmatch(sc.Text()); m != nil {
				at[0] = m[1]
				ready <- at
			}
		}
	}()
	select {
	case at := <-ready:
		c.listen, c.adminAt = at[0], at[1]
	case <-c.exited:
		t.Fatalf("sluice serve exited before listening:\n%s", c.logs)
	case <-time.After(15 * time.Second):
		t.Fatalf("sluice serve did not listen within 15s:\n%s", c.logs)
	}
	if admin && c.adminAt == "" {
		t.Fatalf("sluice serve has no admin listener:\n%s", c.logs)
	}
	return c
}
