package transport

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

// countBudget is a MessageBudget of max bytes that never waits.
type countBudget struct {
	mu        sync.Mutex
	held, max int64
}

func (b *countBudget) Acquire(_ context.Context, n int64) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.held+n > b.max {
		return errors.New("full")
	}
	b.held += n
	return nil
}

func (b *countBudget) Release(n int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.held -= n
}

func (b *countBudget) now() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.held
}

// TestWSMessageBudget: with a Budget, a message takes room as it arrives
// and gives it back at the next Read or Close; one that gets no room
// fails Read with a *BudgetError and the client hears 1013; one that
// stalls past its pace fails Read.
func TestWSMessageBudget(t *testing.T) {
	dial := func(t *testing.T, s *wsServer) (*websocket.Conn, *wsConn) {
		t.Helper()
		ws, _, err := websocket.DefaultDialer.DialContext(testContext(t), s.url, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { ws.Close() })
		return ws, s.accept(t)
	}
	t.Run("held while read, given back", func(t *testing.T) {
		b := &countBudget{max: 4 * BudgetStep}
		s := newWSServer(t, &WSAcceptOptions{Budget: b}, wsPingInterval)
		ws, server := dial(t, s)
		msg := `"` + strings.Repeat("x", BudgetStep+10) + `"`
		wrote := make(chan struct{})
		go func() { ws.WriteMessage(websocket.TextMessage, []byte(msg)); close(wrote) }()
		got, err := server.Read(testContext(t))
		<-wrote
		if err != nil || string(got) != msg {
			t.Fatalf("got %d bytes, %v", len(got), err)
		}
		if h := b.now(); h != 2*BudgetStep {
			t.Errorf("while the message is the reader's: %d bytes held, want %d", h, 2*BudgetStep)
		}
		go ws.WriteMessage(websocket.TextMessage, []byte(`1`))
		if got, err := server.Read(testContext(t)); err != nil || string(got) != "1" {
			t.Fatalf("got %q, %v", got, err)
		}
		if h := b.now(); h != BudgetStep {
			t.Errorf("after the next message: %d bytes held, want %d", h, BudgetStep)
		}
		server.Close()
		if h := b.now(); h != 0 {
			t.Errorf("after Close: %d bytes held", h)
		}
	})
	t.Run("no room", func(t *testing.T) {
		b := &countBudget{max: BudgetStep}
		s := newWSServer(t, &WSAcceptOptions{Budget: b}, wsPingInterval)
		ws, server := dial(t, s)
		go ws.WriteMessage(websocket.TextMessage, []byte(`"`+strings.Repeat("x", 2*BudgetStep)+`"`))
		_, err := server.Read(testContext(t))
		if _, ok := errors.AsType[*BudgetError](err); !ok {
			t.Fatalf("got %v, want a *BudgetError", err)
		}
		if h := b.now(); h != 0 {
			t.Errorf("after the refusal: %d bytes held", h)
		}
		ws.SetReadDeadline(time.Now().Add(5 * time.Second))
		if _, _, err := ws.ReadMessage(); !websocket.IsCloseError(err, websocket.CloseTryAgainLater) {
			t.Errorf("client: got %v, want close 1013", err)
		}
	})
	t.Run("stalled", func(t *testing.T) {
		b := &countBudget{max: 4 * BudgetStep}
		s := newWSServer(t, &WSAcceptOptions{Budget: b, PaceGrace: 300 * time.Millisecond, PaceRate: 1 << 30}, wsPingInterval)
		ws, server := dial(t, s)
		w, err := ws.NextWriter(websocket.TextMessage)
		if err != nil {
			t.Fatal(err)
		}
		w.Write([]byte(`"` + strings.Repeat("x", 8<<10))) // fragments, never the last
		start := time.Now()
		if _, err := server.Read(testContext(t)); err == nil {
			t.Fatal("a message that stopped half way was read")
		}
		if d := time.Since(start); d > 5*time.Second {
			t.Errorf("the stalled message was given up after %v", d)
		}
		server.Close()
		if h := b.now(); h != 0 {
			t.Errorf("after Close: %d bytes held", h)
		}
	})
}
