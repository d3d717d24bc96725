package transport

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/server"
	"go.uber.org/goleak"
)

// TestSSEDialerMCPGo runs a session against mcp-go's legacy HTTP+SSE
// server.
func TestSSEDialerMCPGo(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	gate := make(chan struct{})
	srv := httpTestMCPServer(gate)
	rec := httpNewRecorder(server.NewSSEServer(srv, server.WithKeepAlive(false)))
	ts := httptest.NewServer(rec)
	defer ts.Close()
	ctx := httpTestCtx(t)
	c := httpDial(t, &SSEDialer{URL: ts.URL + "/sse", Header: http.Header{"X-Sluice-Test": {"1"}}})
	defer c.Close()

	res, _ := httpCall(t, ctx, c, 1, "initialize", `{"protocolVersion":"2024-11-05","capabilities":{},"clientInfo":{"name":"t","version":"0"}}`)
	httpWantResult(t, res)
	httpNotify(t, ctx, c, "notifications/initialized")
	res, _ = httpCall(t, ctx, c, 2, "tools/list", `{}`)
	httpWantResult(t, res)
	res, _ = httpCall(t, ctx, c, 3, "tools/call", `{"name":"echo","arguments":{"text":"hi"}}`)
	if got := httpToolText(t, res); got != "hi" {
		t.Errorf("echo: got %q, want hi", got)
	}

	if err := c.Write(ctx, []byte(`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"progress","arguments":{},"_meta":{"progressToken":"p1"}}}`)); err != nil {
		t.Fatal(err)
	}
	if m := httpRead(t, ctx, c); m.Method != "notifications/progress" {
		t.Errorf("got %q, want notifications/progress", m.Method)
	}
	close(gate)
	if res := httpRead(t, ctx, c); string(res.ID) != "4" || httpToolText(t, res) != "done" {
		t.Errorf("progress: got %s %s, want the result for 4", res.ID, res.Result)
	}

	if err := c.Close(); err != nil {
		t.Errorf("Close: got %v, want nil", err)
	}
	if _, err := c.Read(ctx); err != ErrClosed {
		t.Errorf("Read after Close: got %v, want ErrClosed", err)
	}
	reqs := rec.requests()
	if reqs[0].method != http.MethodGet || reqs[0].header.Get("Accept") != "text/event-stream" {
		t.Errorf("first request: got %s Accept %q, want GET Accept text/event-stream", reqs[0].method, reqs[0].header.Get("Accept"))
	}
	for i, r := range reqs {
		if got := r.header.Get("X-Sluice-Test"); got != "1" {
			t.Errorf("request %d: X-Sluice-Test: got %q, want 1", i, got)
		}
	}
}

// sseScripted serves a legacy SSE stream: the endpoint event from
// endpoint, then whatever stream does; POSTs get status.
func sseScripted(endpoint string, status int, stream func(w http.ResponseWriter, r *http.Request)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(status)
			if status >= 400 {
				io.WriteString(w, httpErrorBody)
			}
			return
		}
		sseWriteEvents(w, SSEEvent{Event: "endpoint", Data: []byte(endpoint)})
		if stream != nil {
			stream(w, r)
		}
	})
}

func TestSSEDialerDialErrors(t *testing.T) {
	tests := []struct {
		name    string
		handler http.Handler
		want    string
	}{
		{"other origin", sseScripted("http://evil.example/message", 202, nil), "another origin"},
		{"other scheme", sseScripted("https:///message", 202, nil), "another origin"},
		{"status", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			http.Error(w, "no", http.StatusUnauthorized)
		}), "HTTP 401"},
		{"not a stream", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			io.WriteString(w, "{}")
		}), "want text/event-stream"},
		{"no endpoint", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			sseWriteEvents(w, SSEEvent{Data: []byte("{}")})
		}), "before the endpoint event"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
			ts := httptest.NewServer(tt.handler)
			defer ts.Close()
			_, err := (&SSEDialer{URL: ts.URL + "/sse"}).Dial(httpTestCtx(t))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Dial: got %v, want an error containing %q", err, tt.want)
			}
		})
	}

	t.Run("context ends first", func(t *testing.T) {
		defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
		started := make(chan struct{})
		ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			sseWriteEvents(w)
			close(started)
			<-r.Context().Done()
		}))
		defer ts.Close()
		ctx, cancel := context.WithCancel(httpTestCtx(t))
		go func() {
			<-started
			cancel()
		}()
		if _, err := (&SSEDialer{URL: ts.URL}).Dial(ctx); !errors.Is(err, context.Canceled) {
			t.Errorf("Dial: got %v, want context.Canceled", err)
		}
	})
}

func TestSSEDialerFailures(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	end := make(chan struct{})
	ts := httptest.NewServer(sseScripted("message?x=1", http.StatusInternalServerError, func(w http.ResponseWriter, r *http.Request) {
		sseWriteEvents(w, SSEEvent{Event: "message", Data: []byte(`{"jsonrpc":"2.0","method":"hello"}`)})
		<-end
	}))
	defer ts.Close()
	ctx := httpTestCtx(t)
	c := httpDial(t, &SSEDialer{URL: ts.URL + "/sse?token=secret"})
	defer c.Close()
	if m := httpRead(t, ctx, c); m.Method != "hello" {
		t.Errorf("got %q, want hello", m.Method)
	}

	res, _ := httpCall(t, ctx, c, 1, "ping", `{}`)
	if res.Error == nil || res.Error.Code != UpstreamErrorCode || !strings.Contains(res.Error.Message, "HTTP 500 Internal Server Error: boom") {
		t.Errorf("got %+v, want an upstream error naming HTTP 500 and boom", res.Error)
	}
	if want := ts.URL + "/message"; res.Error != nil && (!strings.Contains(res.Error.Message, want) || strings.Contains(res.Error.Message, "secret")) {
		t.Errorf("message %q: want %s and no query", res.Error.Message, want)
	}
	var serr *HTTPStatusError
	if err := c.Write(ctx, []byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)); !errors.As(err, &serr) || serr.StatusCode != 500 {
		t.Errorf("Write of a notification: got %v, want an HTTPStatusError 500", err)
	}

	close(end) // the server ends the stream
	if _, err := c.Read(ctx); !errors.Is(err, io.EOF) {
		t.Errorf("Read after the stream ended: got %v, want io.EOF", err)
	}
	if err := c.Write(ctx, []byte(`{"jsonrpc":"2.0","method":"x"}`)); !errors.Is(err, io.EOF) {
		t.Errorf("Write after the stream ended: got %v, want io.EOF", err)
	}
}

// TestSSEDialerSSEServer connects this package's client and server.
func TestSSEDialerSSEServer(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	s := &SSEServer{
		MessagePath: func(id string) string { return "/messages" },
		OnSession:   sseEchoSession,
	}
	mux := http.NewServeMux()
	mux.Handle("GET /sse", s)
	mux.HandleFunc("POST /messages", s.HandleMessage)
	ts := httptest.NewServer(mux)
	defer ts.Close()
	ctx := httpTestCtx(t)
	c := httpDial(t, &SSEDialer{URL: ts.URL + "/sse"})
	defer c.Close()
	for i := range 3 {
		// A line break between tokens is JSON whitespace: the message
		// travels compacted.
		msg := fmt.Sprintf("{\"jsonrpc\":\"2.0\",\n\"id\":%d,\"method\":\"ping\",\"params\":{\"text\":\"a\\nb\"}}", i)
		if err := c.Write(ctx, []byte(msg)); err != nil {
			t.Fatal(err)
		}
		got, err := c.Read(ctx)
		if err != nil {
			t.Fatal(err)
		}
		want := fmt.Sprintf(`{"echo":{"jsonrpc":"2.0","id":%d,"method":"ping","params":{"text":"a\nb"}}}`, i)
		if string(got) != want {
			t.Errorf("got %s, want %s", got, want)
		}
	}
}

// sseEchoSession answers each message m with {"echo":m}.
func sseEchoSession(ctx context.Context, id string, c Conn) {
	defer c.Close()
	for {
		msg, err := c.Read(ctx)
		if err != nil {
			return
		}
		if err := c.Write(ctx, []byte(`{"echo":`+string(msg)+`}`)); err != nil {
			return
		}
	}
}
