package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestDemoWalkthrough does what `sluice demo` (the README's first
// command) tells a new user to try: the denied call, an allowed one, a
// call held for approval and approved with the printed command, and the
// audit events at the printed path.
func TestDemoWalkthrough(t *testing.T) {
	t.Setenv("PATH", t.TempDir()) // no sluice on PATH, as under go run
	out := &syncBuffer{}
	demoOut = out
	defer func() { demoOut = os.Stdout }()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- runDemo(ctx, []string{"--listen", "127.0.0.1:0", "--log-level", "warn"}) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("demo: %v", err)
		}
	}()
	endpoint := regexp.MustCompile(`MCP endpoint \(Streamable HTTP\): (\S+)`)
	approvals := regexp.MustCompile(`(\S+) approvals list --admin (\S+) --token (\S+)`)
	approve := regexp.MustCompile(`(\S+) approvals approve ID --admin (\S+) --token (\S+),`)
	events := regexp.MustCompile(`(\S+) events query --db (\S+)`)
	deadline := time.Now().Add(20 * time.Second)
	for !approvals.MatchString(out.String()) && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	text := out.String()
	if !approvals.MatchString(text) || !approve.MatchString(text) || !endpoint.MatchString(text) || !events.MatchString(text) {
		t.Fatalf("demo output:\n%s", text)
	}
	url := endpoint.FindStringSubmatch(text)[1]
	adm := approvals.FindStringSubmatch(text)[1:]
	// The printed commands name a program a shell finds: under `go run
	// ./cmd/sluice demo` (the README's first command) no sluice is on
	// PATH, and they said `sluice approvals list …`: command not found.
	// Here the test binary is the demo, and PATH has no sluice.
	for _, prog := range []string{adm[0], approve.FindStringSubmatch(text)[1], events.FindStringSubmatch(text)[1]} {
		if _, err := exec.LookPath(prog); err != nil {
			t.Errorf("the demo prints commands running %q, which a shell does not find: %v", prog, err)
		}
	}
	adm = adm[1:]
	if a := approve.FindStringSubmatch(text); a[2] != adm[0] || a[3] != adm[1] {
		t.Errorf("the approve command names admin %s token %s, the list command %s %s", a[2], a[3], adm[0], adm[1])
	}
	call := func(tool, args string) string {
		hdr := map[string]string{"Mcp-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": tool}
		_, _, b := rawPost(t, url, hdr, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"`+tool+`","arguments":`+args+modernMeta+`}}`)
		return b
	}
	if got := call("send_email", `{"to":"x@example.com","subject":"hi","body":"secret"}`); !strings.Contains(got, "sending data outside") {
		t.Errorf("send_email: %s", got)
	}
	if got := call("echo", `{"message":"hi"}`); !strings.Contains(got, "hi") || strings.Contains(got, "isError\":true") {
		t.Errorf("echo: %s", got)
	}
	held := call("add", `{"a":5000,"b":1}`)
	id := approvalID.FindString(held)
	if id == "" {
		t.Fatalf("add 5000: not held: %s", held)
	}
	var list bytes.Buffer
	if err := runApprovals(ctx, []string{"list", "--admin", adm[0], "--token", adm[1]}, &list); err != nil || !strings.Contains(list.String(), id) {
		t.Fatalf("the printed approvals command: %v\n%s", err, list.String())
	}
	if err := runApprovals(ctx, []string{"approve", id, "--admin", adm[0], "--token", adm[1], "--by", "newcomer"}, &list); err != nil {
		t.Fatal(err)
	}
	if got := call("add", `{"a":5000,"b":1}`); !strings.Contains(got, "5001") {
		t.Errorf("add 5000 after approval: %s", got)
	}
	if _, err := os.Stat(events.FindStringSubmatch(text)[2]); err != nil {
		t.Errorf("the printed events database: %v", err)
	}
}
