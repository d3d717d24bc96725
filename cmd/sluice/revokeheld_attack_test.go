package main

import (
	"errors"
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
// came. Now the connection gets an error saying why and is closed (1008)
// once the key is found revoked, its held call withdrawn; an approval
// that comes first finds the credential gone when the call is decided
// again: it never reaches the upstream.
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
	// The connection is closed once its key is found revoked (asked every
	// second while nothing passes), its held call withdrawn: the client
	// reads why, then the close.
	var all []string
	for {
		got, err := read()
		if err != nil {
			var ce *websocket.CloseError
			if !errors.As(err, &ce) || ce.Code != websocket.ClosePolicyViolation {
				t.Errorf("the connection ended with %v, want closed with 1008 (policy violation)", err)
			}
			break
		}
		all = append(all, got)
	}
	// An operator's approval after comes too late: the request is
	// withdrawn (409), or, taken in the moment before the relay's end
	// withdraws it, finds the key revoked when the call is decided again.
	if got := adminDo(t, "POST", "http://"+g.admin+"/admin/approvals/"+id, "application/json", `{"action":"approve"}`,
		map[string]string{"Authorization": "Bearer t0k"}); got != http.StatusConflict && got != http.StatusOK {
		t.Errorf("approve after the connection was closed: HTTP %d, want 409 (withdrawn) or 200", got)
	}
	joined := strings.Join(all, "\n")
	if rec.saw(`"name":"add"`) || strings.Contains(joined, `"text":"5"`) {
		t.Errorf("the held call of a revoked key reached the upstream once approved; the client read %.300s", joined)
	}
	if !strings.Contains(joined, "revoked") {
		t.Errorf("after the approval the client read %.300s, want an error saying the key was revoked", joined)
	}
}
