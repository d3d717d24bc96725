package transport

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

// wsServer starts an httptest server whose handler accepts WebSockets and
// hands the server-side Conns (or accept errors) to the test.
type wsServer struct {
	url   string
	conns chan *wsConn
	errs  chan error
}

func newWSServer(t *testing.T, opts *WSAcceptOptions, pingInterval time.Duration) *wsServer {
	t.Helper()
	s := &wsServer{conns: make(chan *wsConn, 1), errs: make(chan error, 1)}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := acceptWS(w, r, opts, pingInterval)
		if err != nil {
			s.errs <- err
			return
		}
		s.conns <- c
	}))
	t.Cleanup(srv.Close)
	s.url = "ws" + strings.TrimPrefix(srv.URL, "http")
	return s
}

// accept returns the server side of the connection just dialled.
func (s *wsServer) accept(t *testing.T) *wsConn {
	t.Helper()
	select {
	case c := <-s.conns:
		t.Cleanup(func() { c.Close() })
		return c
	case err := <-s.errs:
		t.Fatalf("accept: %v", err)
		return nil
	}
}

func TestWSRoundTrip(t *testing.T) {
	stdioNoLeaks(t)
	s := newWSServer(t, nil, wsPingInterval)
	client := mustDial(t, &WSDialer{URL: s.url, Header: http.Header{"Authorization": {"Bearer x"}}})
	server := s.accept(t)
	for name, c := range map[string]*wsConn{"client": client.(*wsConn), "server": server} {
		if got := c.ws.Subprotocol(); got != "mcp" {
			t.Errorf("%s subprotocol: got %q, want %q", name, got, "mcp")
		}
	}
	tests := []struct {
		name     string
		from, to Conn
		msg      string
	}{
		{"client to server", client, server, `{"jsonrpc":"2.0","id":1,"method":"ping"}`},
		{"server to client", server, client, `{"jsonrpc":"2.0","id":1,"result":{}}`},
		{"escaped newline", client, server, `{"a":"x\ny"}`},
		{"batch", server, client, `[{"jsonrpc":"2.0","method":"a"},{"jsonrpc":"2.0","method":"b"}]`},
		{"5 MiB", client, server, `{"x":"` + strings.Repeat("x", 5<<20) + `"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			errc := make(chan error) // a big message needs the reader going
			go func() { errc <- tt.from.Write(testContext(t), []byte(tt.msg)) }()
			if got := mustRead(t, tt.to); string(got) != tt.msg {
				t.Errorf("got %.80s (%d bytes), want %.80s (%d bytes)", got, len(got), tt.msg, len(tt.msg))
			}
			if err := <-errc; err != nil {
				t.Errorf("Write: %v", err)
			}
		})
	}

	if err := client.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if _, err := server.Read(testContext(t)); !errors.Is(err, io.EOF) {
		t.Errorf("server Read after the client closed: got %v, want io.EOF", err)
	}
	if _, err := client.Read(testContext(t)); !errors.Is(err, ErrClosed) {
		t.Errorf("Read after Close: got %v, want ErrClosed", err)
	}
	if err := client.Write(testContext(t), []byte(`{}`)); !errors.Is(err, ErrClosed) {
		t.Errorf("Write after Close: got %v, want ErrClosed", err)
	}
	if err := client.Close(); err != nil {
		t.Errorf("second Close: got %v, want nil", err)
	}
}

func TestWSServerClose(t *testing.T) {
	stdioNoLeaks(t)
	s := newWSServer(t, nil, wsPingInterval)
	client := mustDial(t, &WSDialer{URL: s.url})
	server := s.accept(t)
	errc := make(chan error)
	go func() {
		_, err := server.Read(context.Background())
		errc <- err
	}()
	server.Close()
	if err := <-errc; !errors.Is(err, ErrClosed) {
		t.Errorf("pending server Read: got %v, want ErrClosed", err)
	}
	if _, err := client.Read(testContext(t)); !errors.Is(err, io.EOF) {
		t.Errorf("client Read after the server closed: got %v, want io.EOF", err)
	}
}

func TestWSContextCancelCloses(t *testing.T) {
	stdioNoLeaks(t)
	tests := []struct {
		name string
		op   func(ctx context.Context, c Conn) error
	}{
		{"Read", func(ctx context.Context, c Conn) error { _, err := c.Read(ctx); return err }},
		{"Write", func(ctx context.Context, c Conn) error { return c.Write(ctx, []byte(`{}`)) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newWSServer(t, nil, wsPingInterval)
			client := mustDial(t, &WSDialer{URL: s.url})
			server := s.accept(t)
			ctx, cancel := context.WithCancel(context.Background())
			// Cancelled before the call: a Write racing a cancel may
			// legitimately complete first, so only this order is deterministic.
			cancel()
			if err := tt.op(ctx, client); !errors.Is(err, context.Canceled) {
				t.Fatalf("got %v, want context.Canceled", err)
			}
			if _, err := client.Read(testContext(t)); !errors.Is(err, ErrClosed) {
				t.Errorf("Read after the cancel: got %v, want ErrClosed", err)
			}
			if _, err := server.Read(testContext(t)); err == nil || errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("server Read: got %v, want the connection to have ended", err)
			}
		})
	}
}

func TestWSOriginRejected(t *testing.T) {
	stdioNoLeaks(t)
	s := newWSServer(t, &WSAcceptOptions{CheckOrigin: func(r *http.Request) bool { return r.Header.Get("Origin") == "https://ok.example" }}, wsPingInterval)
	_, err := (&WSDialer{URL: s.url, Header: http.Header{"Origin": {"https://evil.example"}}}).Dial(testContext(t))
	if err == nil || !strings.Contains(err.Error(), "403") {
		t.Errorf("got %v, want an error naming HTTP 403", err)
	}
	if err := <-s.errs; err == nil {
		t.Error("AcceptWS: got nil error, want one")
	}
	c := mustDial(t, &WSDialer{URL: s.url, Header: http.Header{"Origin": {"https://ok.example"}}})
	c.Close()
	s.accept(t)
}

// A client that does not offer "mcp" still gets a connection.
func TestWSWithoutSubprotocol(t *testing.T) {
	stdioNoLeaks(t)
	s := newWSServer(t, nil, wsPingInterval)
	ws, _, err := websocket.DefaultDialer.DialContext(testContext(t), s.url, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	server := s.accept(t)
	if got := server.ws.Subprotocol(); got != "" {
		t.Errorf("got subprotocol %q, want none", got)
	}
	if err := ws.WriteMessage(websocket.TextMessage, []byte(`{"a":1}`)); err != nil {
		t.Fatal(err)
	}
	if got := mustRead(t, server); string(got) != `{"a":1}` {
		t.Errorf("got %s, want {\"a\":1}", got)
	}
}

func TestWSReadLimit(t *testing.T) {
	stdioNoLeaks(t)
	for _, limit := range []int64{0, 1000} {
		t.Run(fmt.Sprint(limit), func(t *testing.T) {
			want := TooLongError{What: "websocket message", Limit: cmp.Or(limit, DefaultMaxMessageBytes)}
			s := newWSServer(t, &WSAcceptOptions{MaxMessageBytes: limit}, wsPingInterval)
			ws, _, err := websocket.DefaultDialer.DialContext(testContext(t), s.url, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer ws.Close()
			server := s.accept(t)
			go func() {
				ws.WriteMessage(websocket.TextMessage, []byte(`"`+strings.Repeat("x", int(want.Limit)-2)+`"`))
				ws.WriteMessage(websocket.TextMessage, make([]byte, want.Limit+1))
			}()
			if got, err := server.Read(testContext(t)); err != nil || int64(len(got)) != want.Limit {
				t.Fatalf("a message at the limit: got %d bytes, %v; want %d bytes", len(got), err, want.Limit)
			}
			_, err = server.Read(testContext(t))
			if got, ok := errors.AsType[*TooLongError](err); !ok || *got != want {
				t.Errorf("got %v, want %v", err, &want)
			}
			// The client hears why: 1009, message too big.
			ws.SetReadDeadline(time.Now().Add(5 * time.Second))
			if _, _, err := ws.ReadMessage(); !websocket.IsCloseError(err, websocket.CloseMessageTooBig) {
				t.Errorf("client: got %v, want close 1009", err)
			}
		})
	}
}

func TestWSKeepalive(t *testing.T) {
	stdioNoLeaks(t)
	// Long enough that a loaded machine (CI runs the race detector, every
	// package at once, on two CPUs) answers a ping within the pong
	// deadline (two intervals): at 250 ms it once did not.
	const interval = time.Second
	tests := []struct {
		name     string
		answer   bool // whether the client answers pings
		wantDead bool
	}{
		{"peer answers", true, false},
		{"peer silent", false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newWSServer(t, nil, interval)
			ws, _, err := websocket.DefaultDialer.DialContext(testContext(t), s.url, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer ws.Close()
			server := s.accept(t)
			pings := make(chan struct{}, 100)
			ws.SetPingHandler(func(data string) error {
				pings <- struct{}{}
				if !tt.answer {
					return nil
				}
				return ws.WriteControl(websocket.PongMessage, []byte(data), time.Now().Add(time.Second))
			})
			clientDone := make(chan struct{})
			go func() { // control frames are handled while reading
				defer close(clientDone)
				for {
					if _, _, err := ws.ReadMessage(); err != nil {
						return
					}
				}
			}()
			readErr := make(chan error, 1)
			go func() {
				_, err := server.Read(context.Background())
				readErr <- err
			}()
			for range 4 { // twice as long as the pong deadline
				<-pings
			}
			if tt.wantDead {
				if err := <-readErr; err == nil || !strings.Contains(err.Error(), "timeout") {
					t.Errorf("server Read: got %v, want a timeout", err)
				}
			} else {
				select {
				case err := <-readErr:
					// Read is over: waiting for it again below would hang.
					t.Errorf("server Read ended with %v, want it still waiting", err)
				default:
					ws.WriteMessage(websocket.TextMessage, []byte(`{"still":"here"}`))
					if err := <-readErr; err != nil {
						t.Errorf("server Read: got %v, want the message", err)
					}
				}
			}
			server.Close()
			ws.Close()
			<-clientDone
		})
	}
}

// TestWSCloseWith: CloseWith sends its status and reason, cut to what a
// close frame holds, and the Conn is closed.
func TestWSCloseWith(t *testing.T) {
	stdioNoLeaks(t)
	s := newWSServer(t, nil, wsPingInterval)
	client := mustDial(t, &WSDialer{URL: s.url})
	server := s.accept(t)
	if err := server.CloseWith(StatusPolicyViolation, strings.Repeat("r", 200)); err != nil {
		t.Fatalf("CloseWith: %v", err)
	}
	_, err := client.Read(testContext(t))
	var ce *websocket.CloseError
	if !errors.As(err, &ce) || ce.Code != websocket.ClosePolicyViolation || len(ce.Text) != 123 {
		t.Errorf("client Read after CloseWith: got %v, want close 1008 with a 123-byte reason", err)
	}
	if err := server.Write(testContext(t), []byte(`{}`)); !errors.Is(err, ErrClosed) {
		t.Errorf("Write after CloseWith: got %v, want ErrClosed", err)
	}
}
