package gateway

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/sluicehq/sluice/intercept"
)

// TestAttackStaleAnswerAfterRestart: a stdio server (Python, numbering its
// requests from 0 in each process) asks the client "Subscribe to the
// newsletter?" and crashes before the answer. Restarted, it asks "Delete
// every file?" under the same id 0. The user's late "accept" to the first
// question must not reach the new process as consent to the second.
func TestAttackStaleAnswerAfterRestart(t *testing.T) {
	cmd, args := lineFramedServer(t, "python3", "ask_crash_server.py")
	logPath := filepath.Join(t.TempDir(), "consent.log")
	g, err := New(Options{Upstreams: []Upstream{{Name: "u", Command: cmd, Args: args,
		Env: map[string]string{"SLUICE_TEST_LOG": logPath}}}},
		&intercept.Interceptor{Decider: &intercept.StaticDecider{Allow: []string{"ask", "crash", "delete"}}},
		slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	gw := httptest.NewServer(g.Handler())
	defer closeServed(t, gw, g)

	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	ws, _, err := websocket.DefaultDialer.DialContext(ctx, "ws"+strings.TrimPrefix(gw.URL, "http")+"/ws/u", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	ws.SetReadDeadline(time.Now().Add(30 * time.Second))
	send := func(msg string) {
		t.Helper()
		if err := ws.WriteMessage(websocket.TextMessage, []byte(msg)); err != nil {
			t.Fatal(err)
		}
	}
	type message struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Params struct {
			Message string `json:"message"`
		} `json:"params"`
		Result struct {
			Content []struct {
				Text string `json:"text"`
			} `json:"content"`
		} `json:"result"`
	}
	// next reads until a message satisfies want.
	next := func(want func(message) bool) message {
		t.Helper()
		for {
			_, b, err := ws.ReadMessage()
			if err != nil {
				t.Fatal(err)
			}
			var m message
			if err := json.Unmarshal(b, &m); err != nil {
				t.Fatalf("%s: %v", b, err)
			}
			if want(m) {
				return m
			}
		}
	}
	call := func(id int, name string) string {
		return `{"jsonrpc":"2.0","id":` + strconv.Itoa(id) + `,"method":"tools/call","params":{"name":"` + name + `","arguments":{}}}`
	}

	send(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{"elicitation":{}},"clientInfo":{"name":"t","version":"1"}}}`)
	next(func(m message) bool { return string(m.ID) == "0" })
	send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	send(call(1, "ask"))
	first := next(func(m message) bool { return m.Method == "elicitation/create" })
	if first.Params.Message != "Subscribe to the newsletter?" {
		t.Fatalf("got question %q", first.Params.Message)
	}
	send(call(2, "crash"))
	next(func(m message) bool { return string(m.ID) == "2" }) // its restart error
	send(call(3, "delete"))
	second := next(func(m message) bool { return m.Method == "elicitation/create" })
	if second.Params.Message != "Delete every file?" {
		t.Fatalf("got question %q", second.Params.Message)
	}
	// The user accepts the newsletter, late; then declines the deletion.
	send(`{"jsonrpc":"2.0","id":` + string(first.ID) + `,"result":{"action":"accept","content":{}}}`)
	send(`{"jsonrpc":"2.0","id":` + string(second.ID) + `,"result":{"action":"decline"}}`)
	got := next(func(m message) bool { return string(m.ID) == "3" })
	if len(got.Result.Content) != 1 || got.Result.Content[0].Text != "delete: decline" {
		t.Errorf("delete answered %+v, want \"delete: decline\"", got.Result)
	}
	if b, _ := os.ReadFile(logPath); len(b) > 0 {
		t.Errorf("the restarted server took the answer to the old question as consent: it logged %q", b)
	}
}
