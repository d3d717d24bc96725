package gateway

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/sluicehq/sluice/examples/demo-server/demo"
	"github.com/sluicehq/sluice/gateway/transport"
	"github.com/sluicehq/sluice/intercept"
)

// hidingDecider is allowEcho plus a ToolFilter that hides send_email and
// web_search, and remembers whom it was asked for.
type hidingDecider struct {
	intercept.StaticDecider

	mu    sync.Mutex
	asked []intercept.ActionDescriptor
}

var hiddenTools = []string{"send_email", "web_search"}

func (h *hidingDecider) Visible(_ context.Context, d *intercept.ActionDescriptor) bool {
	h.mu.Lock()
	h.asked = append(h.asked, *d)
	h.mu.Unlock()
	return !slices.Contains(hiddenTools, d.ToolName)
}

// takeAsked returns and forgets the descriptors Visible was asked about.
func (h *hidingDecider) takeAsked() []intercept.ActionDescriptor {
	h.mu.Lock()
	defer h.mu.Unlock()
	a := h.asked
	h.asked = nil
	return a
}

// listObserver hands every observed tools/list result to a channel.
type listObserver struct{ seen chan jsontext.Value }

func (o *listObserver) ObserveTools(_ string, result jsontext.Value) { o.seen <- result.Clone() }

// next waits for the next observed result.
func (o *listObserver) next(t *testing.T) jsontext.Value {
	t.Helper()
	select {
	case r := <-o.seen:
		return r
	case <-time.After(10 * time.Second):
		t.Fatal("the observer never saw the tools/list result")
		return nil
	}
}

// asSSE answers the POSTs of next as SSE streams: a log notification, then
// next's JSON response.
func asSSE(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			next.ServeHTTP(w, r)
			return
		}
		rec := httptest.NewRecorder()
		next.ServeHTTP(rec, r)
		res := rec.Result()
		body, _ := io.ReadAll(res.Body)
		if !strings.HasPrefix(res.Header.Get("Content-Type"), "application/json") || len(bytes.TrimSpace(body)) == 0 {
			for k, v := range res.Header {
				w.Header()[k] = v
			}
			w.WriteHeader(res.StatusCode)
			_, _ = w.Write(body)
			return
		}
		for k, v := range res.Header {
			if k != "Content-Length" && k != "Content-Type" {
				w.Header()[k] = v
			}
		}
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(res.StatusCode)
		fmt.Fprintf(w, "event: message\ndata: %s\n\n", `{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"listing"}}`)
		fmt.Fprintf(w, "id: ev-1\nevent: message\ndata: %s\n\n", bytes.TrimSpace(body))
	})
}

// withLength answers the POSTs of next with a Content-Length.
func withLength(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			next.ServeHTTP(w, r)
			return
		}
		rec := httptest.NewRecorder()
		next.ServeHTTP(rec, r)
		for k, v := range rec.Header() {
			w.Header()[k] = v
		}
		w.Header().Set("Content-Length", strconv.Itoa(rec.Body.Len()))
		w.WriteHeader(rec.Code)
		_, _ = w.Write(rec.Body.Bytes())
	})
}

// newHidingFixture serves a JSON-answering HTTP upstream ("json"), an
// SSE-answering one ("sse") and, unless stdio is empty, a stdio one
// ("stdio"), through a gateway whose interceptor hides tools when hide is
// set.
func newHidingFixture(t *testing.T, dec intercept.Decider, hide bool, stdio string) (*Gateway, string, *listObserver) {
	t.Helper()
	jsonUp := httptest.NewServer(withLength(demo.NewHTTPHandler(demo.NewServer(demo.Options{}), demo.HTTPOptions{JSONResponse: true})))
	t.Cleanup(jsonUp.Close)
	sseUp := httptest.NewServer(asSSE(demo.NewHTTPHandler(demo.NewServer(demo.Options{}), demo.HTTPOptions{})))
	t.Cleanup(sseUp.Close)
	ups := []Upstream{{Name: "json", URL: jsonUp.URL + "/mcp"}, {Name: "sse", URL: sseUp.URL + "/mcp"}}
	if stdio != "" {
		ups = append(ups, Upstream{Name: "stdio", Command: stdio, Args: []string{"-transport", "stdio"}})
	}
	obs := &listObserver{seen: make(chan jsontext.Value, 16)}
	g, err := New(Options{Upstreams: ups}, &intercept.Interceptor{Decider: dec, Observer: obs, HideDeniedTools: hide}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	gw := httptest.NewServer(g.Handler())
	t.Cleanup(func() { closeServed(t, gw, g) })
	return g, gw.URL, obs
}

const modernList = `{"jsonrpc":"2.0","id":7,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28",` +
	`"io.modelcontextprotocol/clientInfo":{"name":"test","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}}}}`

// responseTo finds the JSON-RPC response with id in a JSON or SSE body.
func responseTo(t *testing.T, hdr http.Header, body string, id string) *intercept.Message {
	t.Helper()
	var msgs [][]byte
	if isEventStream(hdr) {
		rd := transport.NewSSEReader(strings.NewReader(body))
		for {
			ev, err := rd.Next()
			if err != nil {
				break
			}
			msgs = append(msgs, ev.Data)
		}
	} else {
		msgs = append(msgs, []byte(body))
	}
	for _, b := range msgs {
		m, err := intercept.DecodeMessage(b)
		if err != nil {
			t.Fatalf("the client got an undecodable message %q: %v", b, err)
		}
		if m.Kind == intercept.KindResponse && m.IDKey() == id {
			return m
		}
	}
	t.Fatalf("no response with id %s in %q", id, body)
	return nil
}

// toolsByName splits a tools/list result into each tool's exact bytes.
func toolsByName(t *testing.T, result jsontext.Value) (names []string, raw map[string]string) {
	t.Helper()
	var page struct {
		Tools []jsontext.Value `json:"tools"`
	}
	if err := json.Unmarshal(result, &page); err != nil {
		t.Fatalf("tools/list result %s: %v", result, err)
	}
	raw = map[string]string{}
	for _, v := range page.Tools {
		var tool struct {
			Name string `json:"name"`
		}
		if err := json.Unmarshal(v, &tool); err != nil {
			t.Fatal(err)
		}
		names = append(names, tool.Name)
		raw[tool.Name] = string(v)
	}
	return names, raw
}

// checkHidden checks that the client got the upstream's list minus the
// hidden tools, every kept tool byte for byte, and that the observer got
// the whole list.
func checkHidden(t *testing.T, got jsontext.Value, observed jsontext.Value, hidden []string) {
	t.Helper()
	gotNames, gotRaw := toolsByName(t, got)
	upNames, upRaw := toolsByName(t, observed)
	for _, h := range hiddenTools {
		if !slices.Contains(upNames, h) {
			t.Errorf("the observer's list %v lacks %s: it must see the upstream's whole list", upNames, h)
		}
	}
	var want []string
	for _, n := range upNames {
		if !slices.Contains(hidden, n) {
			want = append(want, n)
		}
	}
	if !slices.Equal(gotNames, want) {
		t.Errorf("client's tools: got %v, want %v", gotNames, want)
	}
	for _, n := range gotNames {
		if gotRaw[n] != upRaw[n] {
			t.Errorf("tool %s changed on the way:\n got %s\nwant %s", n, gotRaw[n], upRaw[n])
		}
	}
}

func TestHideDeniedTools(t *testing.T) {
	dec := &hidingDecider{StaticDecider: *allowEcho}
	g, url, obs := newHidingFixture(t, dec, true, buildDemoServer(t))
	for _, tc := range []struct {
		route, version string
		sse            bool
	}{
		{"json", "2025-11-25", false},
		{"json", "2026-07-28", false},
		{"sse", "2025-11-25", true},
		{"sse", "2026-07-28", true},
		{"stdio", "2025-11-25", false},
		{"stdio", "2026-07-28", false},
	} {
		t.Run(tc.route+"/"+tc.version, func(t *testing.T) {
			u := url + "/mcp/" + tc.route
			var hdr map[string]string
			var body, agent, id string
			if tc.version == modernVersion {
				hdr, body, agent, id = modernHeaders("tools/list", ""), modernList, "test", "7"
			} else {
				sid := initialize(t, u)
				hdr = map[string]string{"Mcp-Session-Id": sid, "Mcp-Protocol-Version": tc.version}
				body, agent, id = `{"jsonrpc":"2.0","id":"l1","method":"tools/list"}`, "raw", `"l1"`
			}
			dec.takeAsked()
			status, rh, got := post(t, u, hdr, body)
			if status != 200 {
				t.Fatalf("tools/list: got %d %s", status, got)
			}
			if isEventStream(rh) != tc.sse {
				t.Fatalf("content type %q: want SSE %v", rh.Get("Content-Type"), tc.sse)
			}
			if cl := rh.Get("Content-Length"); (cl != "" || tc.route == "json") && cl != strconv.Itoa(len(got)) {
				t.Errorf("Content-Length %q, want %d", cl, len(got))
			}
			m := responseTo(t, rh, got, id)
			checkHidden(t, m.Result, obs.next(t), hiddenTools)
			for _, d := range dec.takeAsked() {
				if d.Agent != agent || d.Upstream != tc.route || d.ProtocolVersion != tc.version {
					t.Errorf("Visible asked about %s for agent %q on %q (%s), want %q on %q (%s)", d.ToolName, d.Agent, d.Upstream, d.ProtocolVersion, agent, tc.route, tc.version)
				}
			}
		})
	}
	// Hiding is no decision: a hidden tool called anyway is decided as
	// before.
	status, _, body := post(t, url+"/mcp/json", modernHeaders("tools/call", "web_search"), modernCall(8, "web_search", `{"query":"x"}`))
	if status != 200 || !strings.Contains(body, `"status":"denied"`) {
		t.Errorf("calling a hidden tool: got %d %s, want the policy's denial", status, body)
	}

	t.Run("conn", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		c2g, fromClient := io.Pipe()
		toClient, g2c := io.Pipe()
		down := transport.NewStdioConn(c2g, g2c, nil)
		client := transport.NewStdioConn(toClient, fromClient, nil)
		defer client.Close()
		done := make(chan error, 1)
		// The SSE upstream: a JSON body's trailing newline cannot be
		// written to a stdio client (transport.httpStreamableConn passes
		// it on).
		go func() { done <- g.ServeConn(ctx, "sse", down) }()
		defer func() {
			cancel()
			<-done
		}()
		roundTrip := func(msg, id string) *intercept.Message {
			t.Helper()
			if err := client.Write(ctx, []byte(msg)); err != nil {
				t.Fatal(err)
			}
			for {
				b, err := client.Read(ctx)
				if err != nil {
					t.Fatalf("reading the answer to %s: %v", msg, err)
				}
				if m, err := intercept.DecodeMessage(b); err == nil && m.Kind == intercept.KindResponse && m.IDKey() == id {
					return m
				}
			}
		}
		roundTrip(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"piped","version":"1"}}}`, "0")
		if err := client.Write(ctx, []byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)); err != nil {
			t.Fatal(err)
		}
		dec.takeAsked()
		m := roundTrip(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, "1")
		checkHidden(t, m.Result, obs.next(t), hiddenTools)
		for _, d := range dec.takeAsked() {
			if d.Agent != "piped" || d.Upstream != "sse" {
				t.Errorf("Visible asked about %s for agent %q on %q, want piped on sse", d.ToolName, d.Agent, d.Upstream)
			}
		}
	})
}

// TestHideDeniedToolsOff checks that without the option every tool is
// listed, JSON and SSE, and that a Decider without Visible hides nothing.
func TestHideDeniedToolsOff(t *testing.T) {
	for _, tc := range []struct {
		name string
		dec  intercept.Decider
		hide bool
	}{
		{"option off", &hidingDecider{StaticDecider: *allowEcho}, false},
		{"decider without Visible", allowEcho, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, url, obs := newHidingFixture(t, tc.dec, tc.hide, "")
			for _, route := range []string{"json", "sse"} {
				status, rh, got := post(t, url+"/mcp/"+route, modernHeaders("tools/list", ""), modernList)
				if status != 200 {
					t.Fatalf("%s: got %d %s", route, status, got)
				}
				checkHidden(t, responseTo(t, rh, got, "7").Result, obs.next(t), nil)
			}
		})
	}
}
