package main

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/sluicehq/sluice/auth"
)

// TestRevokedKeyEndsConnection: a WebSocket connection (a route's /ws and
// the virtual server's /ws) opened with an API key stops serving once the
// key is revoked: authentication ran once, at the upgrade, and the
// connection outlives it. The next message gets an error saying why, and
// the connection is closed.
func TestRevokedKeyEndsConnection(t *testing.T) {
	for _, path := range []string{"/ws/demo", "/ws"} {
		t.Run(path, func(t *testing.T) {
			ws, keyFile := keyedWS(t, path)
			roundTrip := func(msg string) (string, error) {
				if err := ws.WriteMessage(websocket.TextMessage, []byte(msg)); err != nil {
					return "", err
				}
				ws.SetReadDeadline(time.Now().Add(10 * time.Second))
				_, b, err := ws.ReadMessage()
				return string(b), err
			}
			if got, err := roundTrip(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}`); err != nil || !strings.Contains(got, "protocolVersion") {
				t.Fatalf("initialize: %v %s", err, got)
			}
			ws.WriteMessage(websocket.TextMessage, []byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`))
			call := `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"message":"hi"}}}`
			if got, err := roundTrip(call); err != nil || !strings.Contains(got, "Echo: hi") {
				t.Fatalf("call before revoking: %v %s", err, got)
			}
			revokeFirstKey(t, keyFile)
			time.Sleep(1100 * time.Millisecond) // the key file is read again at most once a second
			got, err := roundTrip(strings.Replace(call, `"id":2`, `"id":3`, 1))
			if err != nil || strings.Contains(got, "Echo: hi") || !strings.Contains(got, "revoked") {
				t.Fatalf("call after revoking: %v %s, want an error saying the key was revoked", err, got)
			}
			ws.SetReadDeadline(time.Now().Add(5 * time.Second))
			if _, b, err := ws.ReadMessage(); err == nil {
				t.Errorf("the connection stays open after the revoked key was refused: %s", b)
			}
		})
	}
}

// revokeFirstKey revokes the first key of keyFile (alice's, of
// aliceAndMallory) and returns when it did.
func revokeFirstKey(t *testing.T, keyFile string) time.Time {
	t.Helper()
	ids, err := auth.ListKeys(keyFile)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	if _, err := auth.RevokeKey(keyFile, ids[0].ID, now); err != nil {
		t.Fatal(err)
	}
	return now
}

// keyedWS starts serve with a virtual server and API keys, and opens
// path (/ws/demo or /ws) with alice's key; it returns the connection and
// the key file, in which the test revokes the key.
func keyedWS(t *testing.T, path string) (*websocket.Conn, string) {
	t.Helper()
	keyFile, key, _ := aliceAndMallory(t)
	g := startServe(t, "virtual_servers: [{}]\npolicy: {default: allow}\nauth: {mode: api_key, api_keys: {file: "+keyFile+"}}\n")
	base := strings.TrimSuffix(g.url, "/mcp/demo")
	ws, _, err := (&websocket.Dialer{Subprotocols: []string{"mcp"}}).Dial("ws"+strings.TrimPrefix(base, "http")+path,
		http.Header{"Authorization": {"Bearer " + key}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ws.Close() })
	return ws, keyFile
}
