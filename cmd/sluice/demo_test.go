package main

import (
	"bytes"
	"context"
	"os"
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
	approvals := regexp.MustCompile(`sluice approvals list --admin (\S+) --token (\S+)`)
	events := regexp.MustCompile(`sluice events query --db (\S+)`)
	deadline := time.Now().Add(20 * time.Second)
	for !approvals.MatchString(out.String()) && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	text := out.String()
	if !approvals.MatchString(text) || !endpoint.MatchString(text) || !events.MatchString(text) {
		t.Fatalf("demo output:\n%s", text)
	}
	url := endpoint.FindStringSubmatch(text)[1]
	adm := approvals.FindStringSubmatch(text)
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
	if err := runApprovals(ctx, []string{"list", "--admin", adm[1], "--token", adm[2]}, &list); err != nil || !strings.Contains(list.String(), id) {
		t.Fatalf("the printed approvals command: %v\n%s", err, list.String())
	}
	if err := runApprovals(ctx, []string{"approve", id, "--admin", adm[1], "--token", adm[2], "--by", "newcomer"}, &list); err != nil {
		t.Fatal(err)
	}
	if got := call("add", `{"a":5000,"b":1}`); !strings.Contains(got, "5001") {
		t.Errorf("add 5000 after approval: %s", got)
	}
	if _, err := os.Stat(events.FindStringSubmatch(text)[1]); err != nil {
		t.Errorf("the printed events database: %v", err)
	}
}
