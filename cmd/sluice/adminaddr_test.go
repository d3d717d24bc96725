package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// A gateway whose admin_listen picks its port (127.0.0.1:0, as the
// desktop example's wraps do) is found by `sluice approvals --config`
// through the address it publishes in data_dir; gone when it stops.
func TestApprovalsFindPickedAdminPort(t *testing.T) {
	dir := t.TempDir()
	yaml := holdAdd + "admin_listen: 127.0.0.1:0\ndata_dir: " + dir + "\n"
	g := startServe(t, yaml)
	call := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"add","arguments":{"a":2,"b":3}` + modernMeta + `}}`
	_, _, held := rawPost(t, g.url, modernHdr, call)
	id := approvalID.FindString(held)
	if id == "" {
		t.Fatalf("held: %s", held)
	}
	cfgFile := filepath.Join(t.TempDir(), "sluice.yaml")
	if err := os.WriteFile(cfgFile, []byte(yaml+"upstreams: [{name: demo, url: http://127.0.0.1:1/mcp}]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := runApprovals(context.Background(), []string{"list", "--config", cfgFile}, &out); err != nil {
		t.Fatalf("approvals list --config with admin_listen 127.0.0.1:0: %v", err)
	}
	if !strings.Contains(out.String(), id) {
		t.Errorf("approvals list does not show %s:\n%s", id, out.String())
	}
	// --admin as the gateway logs it: host:port.
	out.Reset()
	if err := runApprovals(context.Background(), []string{"list", "--config", cfgFile, "--admin", g.admin}, &out); err != nil || !strings.Contains(out.String(), id) {
		t.Errorf("approvals list --admin %s: %v\n%s", g.admin, err, out.String())
	}
	if err := g.stop(); err != nil {
		t.Fatal(err)
	}
	if m, _ := filepath.Glob(filepath.Join(dir, adminAddrGlob)); len(m) != 0 {
		t.Errorf("the address is still published after the gateway stopped: %v", m)
	}
	err := runApprovals(context.Background(), []string{"list", "--config", cfgFile}, &out)
	if err == nil || !strings.Contains(err.Error(), "no running gateway or wrap") {
		t.Errorf("with no gateway running: %v, want a clear error", err)
	}
}

// An address file left by a process that died, whose pid a later process
// got, is not followed: the start time differs.
func TestAdminAddrStaleFile(t *testing.T) {
	dir := t.TempDir()
	self := os.Getpid()
	if processStart(self) == "" {
		t.Skip("no /proc")
	}
	path := filepath.Join(dir, "admin."+strconv.Itoa(self)+".addr")
	if err := os.WriteFile(path, []byte("127.0.0.1:1\n12345\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if addr, err := findAdminAddr(dir); err == nil {
		t.Errorf("followed a stale file to %s", addr)
	}
	remove, err := publishAdminAddr(dir, "127.0.0.1:2")
	if err != nil {
		t.Fatal(err)
	}
	if addr, err := findAdminAddr(dir); err != nil || addr != "127.0.0.1:2" {
		t.Errorf("own file: %q %v", addr, err)
	}
	remove()
}
