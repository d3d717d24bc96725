package main

import (
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

// TestAttackRevokedKeyStillReceives: an agent whose API key was revoked
// kept a WebSocket connection (a route's /ws, the virtual server's /ws)
// and went on reading what the upstream sent it — the progress of a long
// call, its result, and as well whatever else the server pushes
// (sampling and elicitation requests carry the server's data) — for as
// long as it sent nothing: the connection asked about the key only before
// each message it took. Now a message for the client is not passed on once
// the key no longer holds: the client gets an error saying why, and the
// connection is closed.
func TestAttackRevokedKeyStillReceives(t *testing.T) {
	for _, path := range []string{"/ws/demo", "/ws"} {
		t.Run(path, func(t *testing.T) {
			ws, keyFile := keyedWS(t, path)
			read := func(d time.Duration) (string, error) {
				ws.SetReadDeadline(time.Now().Add(d))
				_, b, err := ws.ReadMessage()
				return string(b), err
			}
			ws.WriteMessage(websocket.TextMessage, []byte(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}`))
			if got, err := read(10 * time.Second); err != nil || !strings.Contains(got, "protocolVersion") {
				t.Fatalf("initialize: %v %s", err, got)
			}
			ws.WriteMessage(websocket.TextMessage, []byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`))
			// 60 steps of 100 ms, each reported.
			ws.WriteMessage(websocket.TextMessage, []byte(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"slow_count","arguments":{"n":60,"delay_ms":100},"_meta":{"progressToken":"p"}}}`))
			if got, err := read(10 * time.Second); err != nil || !strings.Contains(got, "notifications/progress") {
				t.Fatalf("the call's first progress: %v %s", err, got)
			}
			revoked := revokeFirstKey(t, keyFile)
			// The key file is read again at most once a second: what comes
			// in that second may still pass. After it, nothing but the
			// error, and the connection ends.
			var after []string
			for {
				got, err := read(10 * time.Second)
				if err != nil {
					break
				}
				if time.Since(revoked) > 1500*time.Millisecond {
					after = append(after, got)
				}
				if strings.Contains(got, "counted to") {
					t.Errorf("the call's result reached the revoked key's connection %v after revoking: %.200s", time.Since(revoked).Round(time.Millisecond), got)
					break
				}
			}
			if len(after) > 1 || len(after) == 1 && !strings.Contains(after[0], "revoked") {
				t.Errorf("%d messages reached the connection more than 1.5 s after its key was revoked, the first %.200s; want at most the error saying it was revoked", len(after), after[0])
			}
		})
	}
}
