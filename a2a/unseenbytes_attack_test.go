package a2a

import (
	"context"
	"encoding/base64"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/approval"
	"github.com/sluicehq/sluice/intercept"
)

// TestAttackApprovedMessageSwapped (attacker review): a held message is
// approved for the exact call, a hash of the decided arguments. Those
// were the message's text, data parts and file names, media types, URIs
// and sizes only: the agent that got "report.txt, 6 bytes" approved sent
// other 6 bytes, or the approved text with data of its own in the
// message's or a part's metadata, its extensions, the request's metadata
// or configuration, or an A2A-Extensions header, and it reached the agent
// under the approval, recorded with the approved call's arguments.
func TestAttackApprovedMessageSwapped(t *testing.T) {
	rec := newRecAgent(t, `{"name":"stub","url":"BASE/rpc","protocolVersion":"0.3","capabilities":{"pushNotifications":true},"skills":[{"id":"echo","description":"Echo."}]}`)
	store := approval.NewStore(approval.Options{})
	hold := intercept.DeciderFunc(func(context.Context, *intercept.ActionDescriptor) (intercept.Decision, error) {
		return intercept.Decision{Verdict: intercept.RequireApproval, Reason: "needs_human", PolicyVersion: "v1"}, nil
	})
	gw := serveAs(t, &approval.Gate{Next: hold, Store: store}, rec.srv.URL, Options{})
	b64 := func(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }
	msg := func(parts, extra, params string) string {
		return `{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":{"kind":"message","messageId":"m","role":"user","parts":` + parts + extra + `}` + params + `}}`
	}
	text := `[{"kind":"text","text":"summarize the public report"}]`
	file := func(content string) string {
		return `[{"kind":"file","file":{"name":"report.txt","mimeType":"text/plain","bytes":"` + b64(content) + `"}}]`
	}
	for _, c := range []struct {
		name              string
		approved, swapped string
		header            string
	}{
		{"file bytes", msg(file("public"), "", ""), msg(file("SECRET"), "", ""), ""},
		{"message metadata", msg(text, "", ""), msg(text, `,"metadata":{"note":"SECRET"}`, ""), ""},
		{"part metadata", msg(text, "", ""), msg(`[{"kind":"text","text":"summarize the public report","metadata":{"note":"SECRET"}}]`, "", ""), ""},
		{"message extensions", msg(text, "", ""), msg(text, `,"extensions":["https://x.example/SECRET"]`, ""), ""},
		{"params metadata", msg(text, "", ""), msg(text, "", `,"metadata":{"note":"SECRET"}`), ""},
		{"configuration", msg(text, "", ""), msg(text, "", `,"configuration":{"acceptedOutputModes":["SECRET"]}`), ""},
		{"push config token", msg(text, "", ""), msg(text, "", `,"configuration":{"pushNotificationConfig":{"url":"https://93.184.216.34/p","token":"SECRET"}}`), ""},
		{"A2A-Extensions header", msg(text, "", ""), msg(text, "", ""), "https://x.example/SECRET"},
	} {
		t.Run(c.name, func(t *testing.T) {
			rec.mu.Lock()
			rec.seen = nil
			rec.mu.Unlock()
			store = approval.NewStore(approval.Options{})
			gw = serveAs(t, &approval.Gate{Next: hold, Store: store}, rec.srv.URL, Options{})
			got := do(t, "POST", gw.URL+"/a2a/stub", "mallory", "", c.approved)
			if !strings.Contains(got, "approval_required") {
				t.Fatalf("the first message was not held: %s", got)
			}
			reqs := store.List()
			if len(reqs) != 1 {
				t.Fatalf("%d requests held, want 1", len(reqs))
			}
			if _, err := store.Decide(reqs[0].ID, true, "operator"); err != nil {
				t.Fatal(err)
			}
			req := c.swapped
			got = doHeader(t, gw.URL+"/a2a/stub", "mallory", req, "A2A-Extensions", c.header)
			if rec.saw("SECRET") || rec.saw(b64("SECRET")) {
				t.Errorf("a message other than the approved one reached the agent under its approval: %s", got)
			}
			if !strings.Contains(got, "approval_required") {
				t.Errorf("the changed message was not held for an approval of its own: %s", got)
			}
			// The approved message itself still goes, once.
			if got := do(t, "POST", gw.URL+"/a2a/stub", "mallory", "", c.approved); !strings.Contains(got, "completed") {
				t.Errorf("the approved message: %s", got)
			}
		})
	}
}

// TestAttackUnseenMessageBytes (attacker review): the decided arguments
// of a message left out bytes the agent gets: a rule reading the
// arguments (CEL on args, the classifier's scan of them, an audit event's
// arguments) never saw data carried in metadata, extensions or the
// request's configuration, so a message denied for what it says went
// through with the same words there.
func TestAttackUnseenMessageBytes(t *testing.T) {
	rec := newRecAgent(t, `{"name":"stub","url":"BASE/rpc","protocolVersion":"0.3","skills":[{"id":"echo","description":"Echo."}]}`)
	// A rule on the arguments: any message mentioning the secret is
	// denied.
	dlp := intercept.DeciderFunc(func(_ context.Context, d *intercept.ActionDescriptor) (intercept.Decision, error) {
		if strings.Contains(string(d.Parameters), "SECRET") || strings.Contains(string(d.Parameters), "U0VDUkVU") {
			return intercept.Decision{Verdict: intercept.Deny, Reason: "dlp"}, nil
		}
		return intercept.Decision{Verdict: intercept.Allow, Reason: "ok"}, nil
	})
	gw := serveAs(t, dlp, rec.srv.URL, Options{})
	text := `[{"kind":"text","text":"hello"}]`
	msg := func(parts, extra, params string) string {
		return `{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":{"kind":"message","messageId":"m","role":"user","parts":` + parts + extra + `}` + params + `}}`
	}
	for _, c := range []struct{ name, body, header string }{
		{"message metadata", msg(text, `,"metadata":{"note":"SECRET-1"}`, ""), ""},
		{"part metadata", msg(`[{"kind":"text","text":"hello","metadata":{"note":"SECRET-2"}}]`, "", ""), ""},
		{"data part metadata", msg(`[{"kind":"data","data":{"a":1},"metadata":{"note":"SECRET-3"}}]`, "", ""), ""},
		{"file metadata", msg(`[{"kind":"file","file":{"name":"a","bytes":"YQ=="},"metadata":{"note":"SECRET-4"}}]`, "", ""), ""},
		{"message extensions", msg(text, `,"extensions":["SECRET-5"]`, ""), ""},
		{"params metadata", msg(text, "", `,"metadata":{"note":"SECRET-6"}`), ""},
		{"configuration", msg(text, "", `,"configuration":{"acceptedOutputModes":["SECRET-7"]}`), ""},
		{"unknown message member", msg(text, `,"note":"SECRET-8"`, ""), ""},
		{"unknown params member", msg(text, "", `,"note":"SECRET-9"`), ""},
		{"A2A-Extensions", msg(text, "", ""), "SECRET-10"},
		{"envelope member", strings.Replace(msg(text, "", ""), `"id":1,`, `"id":1,"note":"SECRET-11",`, 1), ""},
		{"raw beside bytes", msg(`[{"bytes":"YQ==","raw":"`+base64.StdEncoding.EncodeToString([]byte("SECRET-12"))+`"}]`, "", ""), ""},
		{"role", strings.Replace(msg(text, "", ""), `"role":"user"`, `"role":"SECRET-13"`, 1), ""},
	} {
		got := doHeader(t, gw.URL+"/a2a/stub", "alice", c.body, "A2A-Extensions", c.header)
		if rec.saw("SECRET") || rec.saw("U0VDUkVU") {
			t.Errorf("%s: bytes the decision never saw reached the agent: %s", c.name, got)
			rec.mu.Lock()
			rec.seen = nil
			rec.mu.Unlock()
		}
	}
	// A message without them still goes.
	if got := do(t, "POST", gw.URL+"/a2a/stub", "alice", "", msg(text, `,"metadata":{"skillId":"echo"}`, "")); !strings.Contains(got, "completed") {
		t.Errorf("a plain message: %s", got)
	}
}

func doHeader(t *testing.T, url, principal, body, name, value string) string {
	t.Helper()
	if value == "" {
		return do(t, "POST", url, principal, "", body)
	}
	return doWith(t, url, principal, body, map[string]string{name: value})
}

func doWith(t *testing.T, url, principal, body string, headers map[string]string) string {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Test-Principal", principal)
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}
