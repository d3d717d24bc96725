package gateway

import (
	"log/slog"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/intercept"
)

// buildStateServer builds testdata/stateserver, an mcp-go stdio server
// whose remember and recall tools keep a value for the process.
func buildStateServer(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "stateserver")
	if out, err := exec.Command("go", "build", "-o", bin, "./testdata/stateserver").CombinedOutput(); err != nil {
		t.Fatalf("building stateserver: %v\n%s", err, out)
	}
	return bin
}

// statefulCall is a 2026-07-28 tools/call of the stateserver's tools as
// principal who.
func statefulCall(t *testing.T, u, who, tool, args string) (int, string) {
	t.Helper()
	h := modernHeaders("tools/call", tool)
	if who != "" {
		h["X-Test-Principal"] = who
	}
	status, _, body := post(t, u, h, modernCall(1, tool, args))
	return status, body
}

// TestAttackStatelessPrincipalsShareChild: 2026-07-28 requests to a stdio
// upstream all went down one child process per route, whoever sent them,
// so what a server keeps per process (a browser's cookies and pages, a
// shell's directory, a login) was one principal's and every other's: bob
// recalled what alice had told the server. Each authenticated principal
// now has a connection (a child) of its own, taking a place among the
// route's max_children with its share, ended when idle; requests without
// a principal share one as before.
func TestAttackStatelessPrincipalsShareChild(t *testing.T) {
	g, err := New(Options{
		Upstreams:          []Upstream{{Name: "state", Command: buildStateServer(t), MaxChildren: 2}},
		SessionIdleTimeout: 200 * time.Millisecond,
	}, &intercept.Interceptor{Decider: &intercept.StaticDecider{Allow: []string{"remember", "recall"}}}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	gw := principalGateway(t, g)
	u := gw.URL + "/mcp/state"

	if status, body := statefulCall(t, u, "alice", "remember", `{"value":"alice's session cookie"}`); status != 200 || !strings.Contains(body, "remembered") {
		t.Fatalf("alice remember: %d %s", status, body)
	}
	if _, body := statefulCall(t, u, "alice", "recall", `{}`); !strings.Contains(body, "recalled alice's session cookie") {
		t.Fatalf("alice's own recall lost her state: %s", body)
	}
	if status, body := statefulCall(t, u, "bob", "recall", `{}`); status != 200 || !strings.Contains(body, "recalled nothing") {
		t.Errorf("bob reached alice's process: %d %s", status, body)
	}
	if _, body := statefulCall(t, u, "", "recall", `{}`); !strings.Contains(body, "recalled nothing") {
		t.Errorf("a request without a principal reached alice's process: %s", body)
	}

	// max_children 2: alice and bob hold one each; carol is refused with
	// the limit's error until one of them is idle long enough to end.
	status, body := statefulCall(t, u, "carol", "recall", `{}`)
	if status != 503 || !strings.Contains(body, "max_children") {
		t.Errorf("carol past max_children: got %d %s, want 503 naming max_children", status, body)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		status, body = statefulCall(t, u, "carol", "recall", `{}`)
		if status == 200 || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if status != 200 || !strings.Contains(body, "recalled nothing") {
		t.Errorf("carol after the others' children went idle: %d %s", status, body)
	}
	// alice's child ended with its idle time: she starts afresh.
	if _, body := statefulCall(t, u, "alice", "recall", `{}`); !strings.Contains(body, "recalled nothing") && !strings.Contains(body, "max_children") {
		t.Errorf("alice after her child ended: %s", body)
	}
}
