package transport

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// sseOpenStream GETs base with the client of ts and returns the reader of
// its events, the endpoint URL announced by the first, and a function
// that disconnects, to be called before ts.Close.
func sseOpenStream(t *testing.T, ctx context.Context, ts *httptest.Server, base string) (*SSEReader, *url.URL, func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(ctx)
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base, nil)
	resp, err := ts.Client().Do(req)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	disconnect := func() { cancel(); resp.Body.Close() }
	if resp.StatusCode != http.StatusOK {
		disconnect()
		t.Fatalf("GET status: got %d, want 200", resp.StatusCode)
	}
	if got := resp.Header.Get("Content-Type"); got != "text/event-stream" {
		t.Errorf("GET content type: got %q, want text/event-stream", got)
	}
	r := NewSSEReader(resp.Body)
	ev, err := r.Next()
	if err != nil {
		t.Fatalf("reading the endpoint event: %v", err)
	}
	if ev.Event != "endpoint" {
		t.Fatalf("first event: got %q, want endpoint", ev.Event)
	}
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	ep, err := u.Parse(string(ev.Data))
	if err != nil {
		t.Fatalf("endpoint %q: %v", ev.Data, err)
	}
	return r, ep, disconnect
}

func ssePost(t *testing.T, ts *httptest.Server, u, contentType, body string) (int, httpMsg) {
	t.Helper()
	resp, err := ts.Client().Post(u, contentType, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var m httpMsg
	if resp.StatusCode != http.StatusAccepted {
		if err := json.NewDecoder(resp.Body).Decode(&m); err != nil || m.Error == nil {
			t.Errorf("POST status %d: want a JSON-RPC error body (%v)", resp.StatusCode, err)
		}
	}
	return resp.StatusCode, m
}

func TestSSEServerRoundTrip(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	ids := make(chan string, 1)
	s := &SSEServer{OnSession: func(ctx context.Context, id string, c Conn) {
		ids <- id
		sseEchoSession(ctx, id, c)
	}}
	ts := httptest.NewServer(s)
	defer ts.Close()
	defer s.Close()
	ctx := httpTestCtx(t)

	r, ep, disconnect := sseOpenStream(t, ctx, ts, ts.URL+"/sse")
	defer disconnect()
	id := <-ids
	if got, want := ep.String(), ts.URL+"/sse?sessionId="+id; got != want {
		t.Errorf("endpoint: got %s, want %s", got, want)
	}
	for _, msg := range []string{`{"jsonrpc":"2.0","id":1,"method":"ping"}`, "[\n{\"jsonrpc\":\"2.0\",\"method\":\"x\"}\n]"} {
		if status, _ := ssePost(t, ts, ep.String(), "application/json", msg); status != http.StatusAccepted {
			t.Fatalf("POST: got %d, want 202", status)
		}
		ev, err := r.Next()
		if err != nil {
			t.Fatal(err)
		}
		compact, _ := Compact([]byte(msg))
		if want := `{"echo":` + string(compact) + `}`; ev.Event != "message" || string(ev.Data) != want {
			t.Errorf("got event %q %q, want message %q", ev.Event, ev.Data, want)
		}
	}
}

func TestSSEServerHandleMessageErrors(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	s := &SSEServer{
		MessagePath:     func(string) string { return "/message" },
		OnSession:       sseEchoSession,
		MaxMessageBytes: 64,
	}
	mux := http.NewServeMux()
	mux.Handle("/sse", s)
	mux.HandleFunc("/message", s.HandleMessage)
	ts := httptest.NewServer(mux)
	defer ts.Close()
	ctx := httpTestCtx(t)
	_, ep, disconnect := sseOpenStream(t, ctx, ts, ts.URL+"/sse")
	defer disconnect()
	if ep.Path != "/message" || ep.Query().Get("sessionId") == "" {
		t.Errorf("endpoint: got %s, want /message?sessionId=...", ep)
	}
	unknown := *ep
	unknown.RawQuery = "sessionId=nope"

	tests := []struct {
		name, url, contentType, body string
		want                         int
	}{
		{"ok", ep.String(), "application/json; charset=utf-8", `{"jsonrpc":"2.0","method":"x"}`, http.StatusAccepted},
		{"unknown session", unknown.String(), "application/json", `{}`, http.StatusNotFound},
		{"no session", ts.URL + "/message", "application/json", `{}`, http.StatusNotFound},
		{"too large", ep.String(), "application/json", `{"x":"` + strings.Repeat("a", 64) + `"}`, http.StatusRequestEntityTooLarge},
		{"content type", ep.String(), "text/plain", `{}`, http.StatusUnsupportedMediaType},
		{"not JSON", ep.String(), "application/json", `{"x":`, http.StatusBadRequest},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got, _ := ssePost(t, ts, tt.url, tt.contentType, tt.body); got != tt.want {
				t.Errorf("got %d, want %d", got, tt.want)
			}
		})
	}

	req, _ := http.NewRequest(http.MethodPut, ts.URL+"/sse", nil)
	resp, err := ts.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("PUT: got %d, want 405", resp.StatusCode)
	}
}

// TestSSEServerDisconnect checks that a client going away ends the
// session: Read fails with io.EOF, OnSession returns and the session is
// forgotten.
func TestSSEServerDisconnect(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	readErr := make(chan error, 1)
	returned := make(chan struct{})
	s := &SSEServer{OnSession: func(ctx context.Context, id string, c Conn) {
		defer close(returned)
		_, err := c.Read(context.Background())
		readErr <- err
		if err := c.Write(context.Background(), []byte(`{}`)); err == nil {
			t.Errorf("Write after disconnect: got nil, want an error")
		}
	}}
	ts := httptest.NewServer(s)
	defer ts.Close()
	ctx := httpTestCtx(t)
	_, ep, disconnect := sseOpenStream(t, ctx, ts, ts.URL)
	disconnect()
	if err := <-readErr; !errors.Is(err, io.EOF) {
		t.Errorf("Read: got %v, want io.EOF", err)
	}
	<-returned
	// The handler forgets the session once OnSession has returned; a POST
	// racing with that may still find it ended.
	if got, _ := ssePost(t, ts, ep.String(), "application/json", `{}`); got != http.StatusNotFound {
		t.Errorf("POST after disconnect: got %d, want 404", got)
	}
}

// TestSSEServerSessionEnds checks that the stream ends when OnSession
// returns, after what it wrote.
func TestSSEServerSessionEnds(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	s := &SSEServer{OnSession: func(ctx context.Context, id string, c Conn) {
		c.Write(ctx, []byte(`{"jsonrpc":"2.0","method":"bye"}`))
	}}
	ts := httptest.NewServer(s)
	defer ts.Close()
	r, _, disconnect := sseOpenStream(t, httpTestCtx(t), ts, ts.URL)
	defer disconnect()
	ev, err := r.Next()
	if err != nil || string(ev.Data) != `{"jsonrpc":"2.0","method":"bye"}` {
		t.Errorf("got %q, %v, want the bye message", ev.Data, err)
	}
	if _, err := r.Next(); err != io.EOF {
		t.Errorf("after OnSession returned: got %v, want io.EOF", err)
	}
}

func TestSSEServerCloseAndKeepAlive(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	readErr := make(chan error, 1)
	s := &SSEServer{
		KeepAlive: time.Millisecond,
		OnSession: func(ctx context.Context, id string, c Conn) {
			_, err := c.Read(ctx)
			readErr <- err
		},
	}
	ts := httptest.NewServer(s)
	defer ts.Close()
	ctx := httpTestCtx(t)

	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, ts.URL, nil)
	resp, err := ts.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	br := bufio.NewReader(resp.Body)
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			t.Fatalf("no keep-alive comment: %v", err)
		}
		if line == ": keepalive\n" {
			break
		}
	}

	s.Close()
	if err := <-readErr; err == nil {
		t.Errorf("Read after server Close: got nil, want an error")
	}
	if _, err := io.Copy(io.Discard, br); err != nil {
		t.Errorf("stream after server Close: got %v, want a clean end", err)
	}
	req, _ = http.NewRequestWithContext(ctx, http.MethodGet, ts.URL, nil)
	resp2, err := ts.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp2.Body.Close()
	if resp2.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("GET after Close: got %d, want 503", resp2.StatusCode)
	}
}
