package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/sluicehq/sluice/audit"
	"github.com/sluicehq/sluice/telemetry"
)

// Issue 10's bad input "a session id replayed by another principal" and
// "a principal switching names mid-session" each get an event, not only
// a log line: with API keys, mallory's POST, GET and DELETE on alice's
// /mcp session and her POST to alice's /sse message URL are each a
// sluice.identity_refused event naming the session, its agent and the
// principal that presented it; so is alice initializing her /ws
// connection again.
func TestIdentityRefusedEvents(t *testing.T) {
	keyFile, alice, mallory := aliceAndMallory(t)
	r := startServe(t, evasionPolicy+"auth: {mode: api_key, api_keys: {file: "+keyFile+"}}\n")
	base := strings.TrimSuffix(r.url, "/mcp/demo")

	status, h, body := authedRequest(t, http.MethodPost, r.url, alice, initializeBody, nil)
	sid := h.Get("Mcp-Session-Id")
	if status != 200 || sid == "" {
		t.Fatalf("alice's initialize: got %d %s", status, body)
	}
	sess := map[string]string{"Mcp-Session-Id": sid, "Mcp-Protocol-Version": "2025-06-18"}
	for _, m := range []string{http.MethodPost, http.MethodGet, http.MethodDelete} {
		if status, _, body := authedRequest(t, m, r.url, mallory, stolenCall(2, "stolen"), sess); status != 404 {
			t.Fatalf("mallory's %s on alice's session: got %d %s, want 404", m, status, body)
		}
	}

	req, _ := http.NewRequest(http.MethodGet, base+"/sse/demo", nil)
	req.Header.Set("Authorization", "Bearer "+alice)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var endpoint string
	select {
	case endpoint = <-sseEvents(resp.Body):
	case <-time.After(10 * time.Second):
		t.Fatal("no endpoint event on alice's /sse stream")
	}
	u, err := url.Parse(endpoint)
	if err != nil {
		t.Fatalf("endpoint %q: %v", endpoint, err)
	}
	sseID := u.Query().Get("sessionId")
	if status, _, body := authedRequest(t, http.MethodPost, base+endpoint, mallory, stolenCall(3, "sse-stolen"), nil); status != 404 {
		t.Fatalf("mallory's POST to alice's /sse message URL: got %d %s, want 404", status, body)
	}

	ws, _, err := (&websocket.Dialer{Subprotocols: []string{"mcp"}}).Dial("ws"+strings.TrimPrefix(base, "http")+"/ws/demo",
		http.Header{"Authorization": {"Bearer " + alice}})
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	for i := range 2 {
		if err := ws.WriteMessage(websocket.TextMessage, []byte(initializeBody)); err != nil {
			t.Fatal(err)
		}
		ws.SetReadDeadline(time.Now().Add(10 * time.Second))
		_, b, err := ws.ReadMessage()
		if err != nil {
			t.Fatal(err)
		}
		if i == 1 && !strings.Contains(string(b), "already initialized") {
			t.Fatalf("alice's second initialize on /ws: got %s, want an error", b)
		}
	}
	ws.Close()
	resp.Body.Close()

	if err := r.stop(); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := runEvents(context.Background(), []string{"export", "--db", filepath.Join(r.dir, audit.FileName), "--type", "sluice.identity_refused"}, &out); err != nil {
		t.Fatal(err)
	}
	type attrs struct {
		Transport, Session, Route, Agent, Principal, Reason string
	}
	var got []attrs
	for line := range strings.Lines(out.String()) {
		var e struct{ Attrs attrs }
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			t.Fatalf("event %q: %v", line, err)
		}
		got = append(got, e.Attrs)
	}
	want := []struct{ transport, session, agent, principal, reason string }{
		{"streamable-http", telemetry.SessionRef(sid), "alice", "mallory", "another"},
		{"streamable-http", telemetry.SessionRef(sid), "alice", "mallory", "another"},
		{"streamable-http", telemetry.SessionRef(sid), "alice", "mallory", "another"},
		{"sse", telemetry.SessionRef(sseID), "alice", "mallory", "another"},
		{"websocket", "", "alice", "alice", "already initialized"},
	}
	if len(got) != len(want) {
		t.Fatalf("sluice.identity_refused events: got %d (%s), want %d", len(got), &out, len(want))
	}
	for i, w := range want {
		g := got[i]
		if g.Transport != w.transport || (w.session != "" && g.Session != w.session) || g.Route != "demo" ||
			g.Agent != w.agent || g.Principal != w.principal || !strings.Contains(g.Reason, w.reason) {
			t.Errorf("event %d: got %+v, want transport %s, session %q, route demo, agent %s, principal %s, reason with %q",
				i, g, w.transport, w.session, w.agent, w.principal, w.reason)
		}
	}
}

// TestAuthFailureEventsNameClient: a request refused by authentication is
// a sluice.auth_failure event naming the client; behind a proxy in
// trusted_proxies, the client it forwards for (before: the proxy, every
// client's peer there, so the events could not tell an attacker from
// the operator), and from any other peer the peer, whatever its
// X-Forwarded-For says.
func TestAuthFailureEventsNameClient(t *testing.T) {
	keyFile, _, _ := aliceAndMallory(t)
	r := startServe(t, evasionPolicy+"trusted_proxies: [127.0.0.1]\nauth: {mode: api_key, api_keys: {file: "+keyFile+"}}\n")
	for _, ip := range []string{"127.0.0.1", "127.0.0.2"} {
		c := forwardingFor(ip, func(int) string { return "198.51.100.7" })
		req, _ := http.NewRequest(http.MethodPost, r.url, strings.NewReader(initializeBody))
		req.Header.Set("Authorization", "Bearer sk-wrong")
		req.Header.Set("Content-Type", "application/json")
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Fatalf("a wrong key from %s: %d, want 401", ip, resp.StatusCode)
		}
	}
	if err := r.stop(); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := runEvents(context.Background(), []string{"export", "--db", filepath.Join(r.dir, audit.FileName), "--type", "sluice.auth_failure"}, &out); err != nil {
		t.Fatal(err)
	}
	var clients []string
	for line := range strings.Lines(out.String()) {
		var e struct{ Attrs struct{ Client string } }
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			t.Fatalf("event %q: %v", line, err)
		}
		clients = append(clients, e.Attrs.Client)
	}
	if len(clients) != 2 || clients[0] != "198.51.100.7" || !strings.HasPrefix(clients[1], "127.0.0.2:") {
		t.Errorf("auth_failure clients: %q; want the forwarded client through the trusted proxy, then the untrusted peer itself", clients)
	}
}
