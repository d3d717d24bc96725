package gateway

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	gosdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/sluicehq/sluice/intercept"
)

// docsUpstream is a go-sdk Streamable HTTP server (stateless: go-sdk
// serves 2026-07-28 only so) that lists uris as
// resources, and templ (if not "") as a resource template, serves
// resource subscriptions, and records the URIs it was asked to watch.
type docsUpstream struct {
	srv    *gosdk.Server
	url    string
	mu     sync.Mutex
	subs   []string
	bodies []string // every request it was sent
}

func newDocsUpstream(t *testing.T, name string, uris []string, templ string) *docsUpstream {
	t.Helper()
	d := &docsUpstream{}
	d.srv = gosdk.NewServer(&gosdk.Implementation{Name: name, Version: "1"}, &gosdk.ServerOptions{
		SubscribeHandler: func(_ context.Context, r *gosdk.SubscribeRequest) error {
			d.mu.Lock()
			d.subs = append(d.subs, r.Params.URI)
			d.mu.Unlock()
			return nil
		},
		UnsubscribeHandler: func(context.Context, *gosdk.UnsubscribeRequest) error { return nil },
	})
	read := func(_ context.Context, r *gosdk.ReadResourceRequest) (*gosdk.ReadResourceResult, error) {
		return &gosdk.ReadResourceResult{Contents: []*gosdk.ResourceContents{{URI: r.Params.URI, MIMEType: "text/plain", Text: name + " has " + r.Params.URI}}}, nil
	}
	for _, u := range uris {
		d.srv.AddResource(&gosdk.Resource{URI: u, Name: u}, read)
	}
	if templ != "" {
		d.srv.AddResourceTemplate(&gosdk.ResourceTemplate{URITemplate: templ, Name: "t"}, read)
	}
	h := gosdk.NewStreamableHTTPHandler(func(*http.Request) *gosdk.Server { return d.srv }, &gosdk.StreamableHTTPOptions{Stateless: true})
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		d.mu.Lock()
		d.bodies = append(d.bodies, string(b))
		d.mu.Unlock()
		r.Body = io.NopCloser(bytes.NewReader(b))
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(hs.Close)
	d.url = hs.URL
	return d
}

// asked returns the URIs the upstream was asked to watch.
func (d *docsUpstream) asked() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]string(nil), d.subs...)
}

// sent reports whether a request the upstream was sent holds s.
func (d *docsUpstream) sent(s string) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return slices.ContainsFunc(d.bodies, func(b string) bool { return strings.Contains(b, s) })
}

// updateUntil tells the upstream's subscribers that uri changed, again
// and again until done is closed or ctx ends.
func (d *docsUpstream) updateUntil(ctx context.Context, done <-chan struct{}, uri string) {
	for {
		_ = d.srv.ResourceUpdated(ctx, &gosdk.ResourceUpdatedNotificationParams{URI: uri})
		select {
		case <-done:
			return
		case <-ctx.Done():
			return
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// startDocsGateway serves the upstreams, in order, as virtual server v.
func startDocsGateway(t *testing.T, ic *intercept.Interceptor, ups map[string]*docsUpstream, order ...string) string {
	t.Helper()
	o := Options{VirtualServers: []VirtualServer{{Name: "v", Upstreams: order}}}
	for _, n := range order {
		o.Upstreams = append(o.Upstreams, Upstream{Name: n, URL: ups[n].url})
	}
	if ic == nil {
		ic = &intercept.Interceptor{Decider: &intercept.StaticDecider{Default: intercept.Allow}}
	}
	g, err := New(o, ic, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	gw := httptest.NewServer(g.Handler())
	t.Cleanup(func() { closeServed(t, gw, g) })
	return gw.URL
}

// TestVirtualListenOverConnections: a 2026-07-28 client of a virtual
// server over /ws/v (and the HTTP+SSE /sse/v) opens a subscription as it
// would over Streamable HTTP: it gets the acknowledgement and the
// resource's updates as messages on the connection, and the connection
// goes on serving its other requests meanwhile. Before, every 2026-07-28
// request there was refused as a header mismatch (no message on a
// connection has an Mcp-Method header), and a listen served as the
// connection's first message would have held its reader for as long as
// the subscription lasted.
func TestVirtualListenOverConnections(t *testing.T) {
	docs := newDocsUpstream(t, "docs", []string{"docs://readme"}, "")
	base := startDocsGateway(t, nil, map[string]*docsUpstream{"docs": docs}, "docs")
	listen := strings.Replace(modernRequest("subscriptions/listen", `"notifications":{"resourceSubscriptions":["docs://readme"]},`), `"id":1`, `"id":"sub"`, 1)
	ping := strings.Replace(modernRequest("ping", ""), `"id":1`, `"id":"p"`, 1)

	t.Run("ws", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second) // a failure bound, not a speed goal
		defer cancel()
		ws, _, err := websocket.DefaultDialer.DialContext(ctx, "ws"+strings.TrimPrefix(base, "http")+"/ws/v", http.Header{"Sec-WebSocket-Protocol": {"mcp"}})
		if err != nil {
			t.Fatal(err)
		}
		defer ws.Close()
		ws.SetReadDeadline(time.Now().Add(20 * time.Second))
		msgs := make(chan string, 16)
		go func() {
			defer close(msgs)
			for {
				_, b, err := ws.ReadMessage()
				if err != nil {
					return
				}
				msgs <- string(b)
			}
		}()
		if err := ws.WriteMessage(websocket.TextMessage, []byte(listen)); err != nil {
			t.Fatal(err)
		}
		checkListenStream(t, ctx, docs, msgs, func() {
			if err := ws.WriteMessage(websocket.TextMessage, []byte(ping)); err != nil {
				t.Fatal(err)
			}
		})
	})

	t.Run("sse", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
		defer cancel()
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+"/sse/v", nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		var endpoint string
		for endpoint == "" && sc.Scan() {
			if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
				endpoint = d
			}
		}
		if endpoint == "" {
			t.Fatal("no endpoint event on /sse/v")
		}
		msgs := make(chan string, 16)
		go func() {
			defer close(msgs)
			for sc.Scan() {
				if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
					msgs <- d
				}
			}
		}()
		send := func(body string) {
			r, err := sendPost(ctx, base+endpoint, nil, body)
			if err != nil {
				t.Fatal(err)
			}
			r.Body.Close()
		}
		send(listen)
		checkListenStream(t, ctx, docs, msgs, func() { send(ping) })
	})
}

// checkListenStream reads msgs, a connection's messages after the client
// sent a listen (id "sub") for docs://readme: the acknowledgement first,
// then, as docs says it changed, its update; then the connection answers
// the ping that sendPing sends.
func checkListenStream(t *testing.T, ctx context.Context, docs *docsUpstream, msgs <-chan string, sendPing func()) {
	t.Helper()
	next := func(what string) string {
		t.Helper()
		select {
		case m, ok := <-msgs:
			if !ok {
				t.Fatalf("the connection ended before %s", what)
			}
			return m
		case <-ctx.Done():
			t.Fatalf("no %s on the connection", what)
		}
		return ""
	}
	if m := next("the acknowledgement"); !strings.Contains(m, `"method":"notifications/subscriptions/acknowledged"`) || !strings.Contains(m, `"resourceSubscriptions":["docs://readme"]`) || !strings.Contains(m, `/subscriptionId":"sub"`) {
		t.Fatalf("first message: %s, want the subscription's acknowledgement of docs://readme", m)
	}
	done := make(chan struct{})
	go docs.updateUntil(ctx, done, "docs://readme")
	m := next("the update")
	close(done)
	if !strings.Contains(m, `"method":"notifications/resources/updated"`) || !strings.Contains(m, `"uri":"docs://readme"`) || !strings.Contains(m, `/subscriptionId":"sub"`) {
		t.Fatalf("after the update: %s, want notifications/resources/updated of docs://readme", m)
	}
	sendPing()
	for {
		m := next("the ping's answer")
		if strings.Contains(m, `"id":"p"`) {
			if !strings.Contains(m, `"result"`) {
				t.Errorf("ping during the subscription: %s", m)
			}
			return
		}
	}
}
