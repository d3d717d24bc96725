package main

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

// TestAttackRevokedKeyHeldCallRuns: alice's call held for approval on a
// WebSocket connection waits for an operator; her API key is revoked
// meanwhile (she was found out); an operator working through the queue
// approves the call later. It ran: the key was checked when the call
// came. Now the call is decided again as the wait ends, its credential
// gone: it never reaches the upstream, and the connection gets an error
// saying why.
func TestAttackRevokedKeyHeldCallRuns(t *testing.T) {
	keyFile, key, _ := aliceAndMallory(t)
	var rec upstreamLog
	g := startServeWith(t, "policy: {default: allow, require_approval: [add]}\napprovals: {client_may_answer: true}\nadmin_token: t0k\nauth: {mode: api_key, api_keys: {file: "+keyFile+"}}\n", rec.wrap)
	base := strings.TrimSuffix(g.url, "/mcp/demo")
	ws, _, err := (&websocket.Dialer{Subprotocols: []string{"mcp"}}).Dial("ws"+strings.TrimPrefix(base, "http")+"/ws/demo",
		http.Header{"Authorization": {"Bearer " + key}})
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	read := func() (string, error) {
		ws.SetReadDeadline(time.Now().Add(10 * time.Second))
		_, b, err := ws.ReadMessage()
		return string(b), err
	}
	ws.WriteMessage(websocket.TextMessage, []byte(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"elicitation":{}},"clientInfo":{"name":"c","version":"1"}}}`))
	if got, err := read(); err != nil || !strings.Contains(got, "protocolVersion") {
		t.Fatalf("initialize: %v %s", err, got)
	}
	ws.WriteMessage(websocket.TextMessage, []byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`))
	ws.WriteMessage(websocket.TextMessage, []byte(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"add","arguments":{"a":2,"b":3}}}`))
	q, err := read()
	id := approvalID.FindString(q)
	if err != nil || !strings.Contains(q, "elicitation/create") || id == "" {
		t.Fatalf("want the gateway's question naming the approval, got %v %s", err, q)
	}
	revokeFirstKey(t, keyFile)
	time.Sleep(1100 * time.Millisecond) // the key file is read again at most once a second
	if got := adminDo(t, "POST", "http://"+g.admin+"/admin/approvals/"+id, "application/json", `{"action":"approve"}`,
		map[string]string{"Authorization": "Bearer t0k"}); got != http.StatusOK {
		t.Fatalf("approve: HTTP %d", got)
	}
	var all []string
	for {
		got, err := read()
		if err != nil {
			break
		}
		all = append(all, got)
		if strings.Contains(got, `"id":2`) {
			break // the call's answer
		}
	}
	joined := strings.Join(all, "\n")
	if rec.saw(`"name":"add"`) || strings.Contains(joined, `"text":"5"`) {
		t.Errorf("the held call of a revoked key reached the upstream once approved; the client read %.300s", joined)
	}
	if !strings.Contains(joined, "revoked") {
		t.Errorf("after the approval the client read %.300s, want an error saying the key was revoked", joined)
	}
}
