package gateway

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluicehq/sluice/gateway/transport"
	"github.com/sluicehq/sluice/intercept"
)

// lenientCalls reads a body the way a forgiving upstream would, with
// encoding/json v1 (case-insensitive keys, last duplicate wins), and
// returns the names of the tools/call requests it finds.
func lenientCalls(body []byte) []string {
	var one struct {
		Method string
		Params struct{ Name string }
	}
	var names []string
	if json.Unmarshal(body, &one) == nil && one.Method == "tools/call" {
		names = append(names, one.Params.Name)
	}
	var many []json.RawMessage
	if json.Unmarshal(body, &many) == nil {
		for _, m := range many {
			names = append(names, lenientCalls(m)...)
		}
	}
	return names
}

// lineFramings are the ways real MCP peers split what they receive into
// messages: each gives the line terminators it knows, CRLF first.
var lineFramings = []struct {
	name  string
	terms []string
}{
	{"whole (HTTP JSON parsers)", nil},
	{"LF (Go SDK, TypeScript SDK)", []string{"\n"}},
	{"CRLF", []string{"\r\n"}},
	{"universal newlines (Python TextIOWrapper, Node readline)", []string{"\r\n", "\r", "\n"}},
	{"JavaScript line terminators", []string{"\r\n", "\r", "\n", "\u2028", "\u2029"}},
	{"Python str.splitlines", []string{"\r\n", "\r", "\n", "\v", "\f", "\x1c", "\x1d", "\x1e", "\u0085", "\u2028", "\u2029"}},
}

// hiddenCalls returns every tools/call other than allowed that a peer
// framing msg, one message as sent, by any of lineFramings would parse.
func hiddenCalls(msg []byte, allowed string) []string {
	var out []string
	for _, f := range lineFramings {
		s := string(msg)
		for _, term := range f.terms {
			s = strings.ReplaceAll(s, term, "\n")
		}
		frags := []string{s}
		if f.terms != nil {
			frags = strings.Split(s, "\n")
		}
		for _, frag := range frags {
			for _, name := range lenientCalls([]byte(frag)) {
				if name != allowed {
					out = append(out, fmt.Sprintf("%s by %s framing in %q", name, f.name, msg))
				}
			}
		}
	}
	return out
}

// upstreamModel is an MCP server that answers every request it can read
// and records each tools/call other than echo that any framing finds in
// what it received. It is shared by the upstreams of every transport.
type upstreamModel struct {
	mu     sync.Mutex // guards leaked
	leaked []string
}

// receive checks one message as it arrived and returns the answers to
// its requests, one per request (a batch's answers are sent one by one,
// as the TypeScript SDK's server does).
func (m *upstreamModel) receive(msg []byte) [][]byte {
	if leaks := hiddenCalls(msg, "echo"); len(leaks) > 0 {
		m.mu.Lock()
		m.leaked = append(m.leaked, leaks...)
		m.mu.Unlock()
	}
	return modelAnswers(msg)
}

func (m *upstreamModel) take() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	l := m.leaked
	m.leaked = nil
	return l
}

// modelAnswers answers the requests in msg (one message or a batch).
func modelAnswers(msg []byte) [][]byte {
	type request struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Params struct {
			ProtocolVersion string `json:"protocolVersion"`
		} `json:"params"`
	}
	var rs []request
	msg = bytes.TrimSpace(msg)
	if len(msg) > 0 && msg[0] == '[' {
		json.Unmarshal(msg, &rs)
	} else {
		var r request
		if json.Unmarshal(msg, &r) == nil {
			rs = append(rs, r)
		}
	}
	var out [][]byte
	for _, r := range rs {
		if r.Method == "" || len(r.ID) == 0 {
			continue
		}
		result := `{}`
		switch r.Method {
		case "initialize":
			v, _ := json.Marshal(r.Params.ProtocolVersion)
			result = `{"protocolVersion":` + string(v) + `,"capabilities":{"tools":{}},"serverInfo":{"name":"model","version":"1"}}`
		case "tools/list":
			result = `{"tools":[]}`
		case "tools/call":
			result = `{"content":[{"type":"text","text":"ok"}]}`
		}
		out = append(out, []byte(`{"jsonrpc":"2.0","id":`+string(r.ID)+`,"result":`+result+`}`))
	}
	return out
}

// serveConn runs the model on one upstream Conn until it ends.
func (m *upstreamModel) serveConn(ctx context.Context, c transport.Conn) {
	for {
		msg, err := c.Read(ctx)
		if err != nil {
			return
		}
		for _, a := range m.receive(msg) {
			if c.Write(ctx, a) != nil {
				return
			}
		}
	}
}

// pipeDialer is a stdio upstream in the test process: the gateway's Conn
// writes lines to a pipe the model reads as raw bytes, with no framing of
// its own, and reads the model's answers: one line per answer, or, with
// arrays set, a batch's answers as one batch array.
type pipeDialer struct {
	model  *upstreamModel
	arrays bool
}

func (d *pipeDialer) Dial(ctx context.Context) (transport.Conn, error) {
	toUp, fromGW := io.Pipe()
	toGW, fromUp := io.Pipe()
	go func() {
		defer fromUp.Close()
		br := bufio.NewReader(toUp)
		for {
			// Every framing is applied to each line as the gateway framed
			// it (LF, the MCP stdio framing): one message as sent.
			line, err := br.ReadBytes('\n')
			if err != nil {
				return
			}
			answers := d.model.receive(line[:len(line)-1])
			if d.arrays && len(answers) > 0 && line[0] == '[' {
				answers = [][]byte{append(append([]byte("["), bytes.Join(answers, []byte(","))...), ']')}
			}
			for _, a := range answers {
				if _, err := fromUp.Write(append(a, '\n')); err != nil {
					return
				}
			}
		}
	}()
	return &pipeConn{Conn: transport.NewStdioConn(toGW, fromGW, nil), w: fromGW}, nil
}

// pipeConn closes the write end too, which ends the model's reader.
type pipeConn struct {
	transport.Conn
	w *io.PipeWriter
}

func (c *pipeConn) Close() error {
	c.w.Close()
	return c.Conn.Close()
}

// fuzzUpstream starts an upstream of transport kind run by model and
// returns it as a gateway Upstream, plus for stdio a hook that swaps in
// the in-process dialer once the gateway exists.
func fuzzUpstream(tb testing.TB, kind Transport, model *upstreamModel) (Upstream, func(*Gateway)) {
	switch kind {
	case TransportStreamableHTTP:
		up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method != http.MethodPost {
				w.WriteHeader(http.StatusMethodNotAllowed)
				return
			}
			b, _ := io.ReadAll(r.Body)
			as := model.receive(b)
			if as == nil {
				w.WriteHeader(http.StatusAccepted)
				return
			}
			a := as[0]
			if b = bytes.TrimSpace(b); len(b) > 0 && b[0] == '[' {
				a = append(append([]byte("["), bytes.Join(as, []byte(","))...), ']')
			}
			w.Header().Set("Content-Type", "application/json")
			w.Write(a)
		}))
		tb.Cleanup(up.Close)
		return Upstream{Name: "u", URL: up.URL}, nil
	case TransportSSE:
		s := &transport.SSEServer{OnSession: func(ctx context.Context, _ string, c transport.Conn) { model.serveConn(ctx, c) }}
		up := httptest.NewServer(s)
		tb.Cleanup(up.Close)
		tb.Cleanup(func() { s.Close() })
		return Upstream{Name: "u", Transport: TransportSSE, URL: up.URL + "/sse"}, nil
	case TransportWebSocket:
		up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			c, err := transport.AcceptWS(w, r, nil)
			if err != nil {
				return
			}
			defer c.Close()
			model.serveConn(r.Context(), c)
		}))
		tb.Cleanup(up.Close)
		return Upstream{Name: "u", Transport: TransportWebSocket, URL: "ws" + strings.TrimPrefix(up.URL, "http")}, nil
	case TransportStdio:
		// The command is never run: the dialer is replaced.
		return Upstream{Name: "u", Command: "true"}, func(g *Gateway) {
			g.routes["u"].dialer = &pipeDialer{model: model}
		}
	}
	tb.Fatalf("no fuzz upstream for %q", kind)
	return Upstream{}, nil
}

// noCallHarness is a gateway in front of one upstream transport, reached
// the ways a client can: Streamable HTTP in a 2025 session (each version
// with and without batches), 2026-07-28 stateless, and a Conn relay (the
// path of /ws, /sse and sluice wrap).
type noCallHarness struct {
	model    *upstreamModel
	h        http.Handler
	sessions map[string]string // protocol version -> gateway session id ("" if none)
	wrapIn   io.Writer
	wrapOut  *bufio.Reader
	wrapStop func() // ends the wrap session
	seq      int
}

func newNoCallHarness(tb testing.TB, kind Transport) *noCallHarness {
	model := &upstreamModel{}
	up, hook := fuzzUpstream(tb, kind, model)
	g, err := New(Options{Upstreams: []Upstream{up}},
		&intercept.Interceptor{Decider: &intercept.StaticDecider{Allow: []string{"echo"}}}, slog.New(slog.DiscardHandler))
	if err != nil {
		tb.Fatal(err)
	}
	if hook != nil {
		hook(g)
	}
	x := &noCallHarness{model: model, h: g.Handler(), sessions: map[string]string{}}
	for _, v := range []string{"2025-03-26", "2025-06-18"} {
		rec := x.post(nil, `{"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":"`+v+`","capabilities":{},"clientInfo":{"name":"fuzz","version":"1"}}}`)
		if rec.Code != http.StatusOK {
			tb.Fatalf("initialize %s: got %d %s", v, rec.Code, rec.Body)
		}
		x.sessions[v] = rec.Header().Get(hdrSession)
	}
	ctx, cancel := context.WithCancel(context.Background())
	c2g, fromClient := io.Pipe()
	toClient, g2c := io.Pipe()
	done := make(chan struct{})
	go func() {
		defer close(done)
		g.ServeConn(ctx, "u", transport.NewStdioConn(c2g, g2c, nil))
		g2c.Close()
	}()
	x.wrapIn, x.wrapOut = fromClient, bufio.NewReader(toClient)
	x.wrapStop = func() { toClient.Close() }
	tb.Cleanup(func() {
		cancel()
		fromClient.Close()
		toClient.Close()
		<-done
		g.Close()
	})
	return x
}

// post serves one POST. Its wait is bounded: an upstream that saw a
// request as fragments never answers it.
func (x *noCallHarness) post(hdr http.Header, body string) *httptest.ResponseRecorder {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req := httptest.NewRequestWithContext(ctx, http.MethodPost, "http://127.0.0.1/mcp/u", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range hdr {
		req.Header[k] = v
	}
	rec := httptest.NewRecorder()
	x.h.ServeHTTP(rec, req)
	return rec
}

// send delivers body the way mode says and returns once the upstream has
// read all of it: a ping sent after it on the same upstream connection
// has been answered.
func (x *noCallHarness) send(t *testing.T, body []byte, mode string) {
	x.seq++
	ping := fmt.Sprintf(`{"jsonrpc":"2.0","id":"sync-%d","method":"ping"}`, x.seq)
	switch {
	case mode == "wrap":
		// A client writes lines to sluice wrap; body may hold several.
		errc := make(chan error, 1)
		go func() {
			_, err := x.wrapIn.Write(append(append(body, '\n'), ping+"\n"...))
			errc <- err
		}()
		want := fmt.Sprintf(`"sync-%d"`, x.seq)
		// A session that stops answering fails this and every later input.
		deadline := time.AfterFunc(20*time.Second, x.wrapStop)
		defer deadline.Stop()
		for {
			line, err := x.wrapOut.ReadString('\n')
			if err != nil {
				t.Fatalf("wrap: no answer to the sync ping: %v", err)
			}
			if strings.Contains(line, want) {
				break
			}
		}
		if err := <-errc; err != nil {
			t.Fatalf("writing to wrap: %v", err)
		}
	case isModern(mode):
		// Stateless: headers that agree with the body, if it has them.
		var m struct {
			Method string
			Params struct{ Name, URI string }
		}
		json.Unmarshal(body, &m)
		hdr := http.Header{hdrVersion: {mode}}
		if m.Method != "" && !strings.ContainsAny(m.Method, "\r\n\x00") {
			hdr.Set(hdrMethod, m.Method)
		}
		if name := m.Params.Name + m.Params.URI; name != "" && !strings.ContainsAny(name, "\r\n\x00") {
			hdr.Set(hdrName, name)
		}
		x.post(hdr, string(body))
		x.post(http.Header{hdrVersion: {mode}, hdrMethod: {"ping"}},
			fmt.Sprintf(`{"jsonrpc":"2.0","id":"sync-%d","method":"ping","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":%q,"io.modelcontextprotocol/clientInfo":{"name":"fuzz","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}}}}`, x.seq, mode))
	default:
		v := "2025-06-18"
		if mode == "2025-03-26" {
			v = mode
		}
		hdr := http.Header{hdrVersion: {v}}
		if sid := x.sessions[v]; sid != "" {
			hdr.Set(hdrSession, sid)
		}
		x.post(hdr, string(body))
		x.post(hdr, ping)
	}
}

var noCallSeeds = []string{
	`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"message":"hi"}}}`,
	`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","name":"send_email"}}`,
	`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","Name":"send_email"}}`,
	`{"jsonrpc":"2.0","id":1,"method":"tools/list","Method":"tools/call","params":{"name":"send_email"}}`,
	`[{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"send_email"}}]`,
	`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"send_email"}}`,
	`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"ech\u006f"}}`,
	// Calls hidden between line breaks that JSON takes for whitespace, or
	// in strings, for readers that split lines there (issue 9).
	"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{\"x\":\r{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"tools/call\",\"params\":{\"name\":\"send_email\"}}\r}}",
	"{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\",\"params\":{\"name\":\"echo\",\"arguments\":{\"x\":\r\n{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"tools/call\",\"params\":{\"name\":\"send_email\"}}\r\n}}}",
	"{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"ping\",\"params\":{\"x\":\"\u2028{\\\"jsonrpc\\\":\\\"2.0\\\",\\\"id\\\":9,\\\"method\\\":\\\"tools/call\\\",\\\"params\\\":{\\\"name\\\":\\\"send_email\\\"}}\u2029\"}}",
	"{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"ping\",\"params\":{\"x\":\"\u0085{\\\"jsonrpc\\\":\\\"2.0\\\",\\\"id\\\":9,\\\"method\\\":\\\"tools/call\\\",\\\"params\\\":{\\\"name\\\":\\\"send_email\\\"}}\u0085\"}}",
}

// fuzzNoCall checks the gateway's central invariant for one upstream
// transport: no tools/call reaches the upstream, however it frames what
// it receives, unless the decision point allowed that very tool. The
// version argument picks the client's way in: a 2025 session's protocol
// version, a 2026-07-28 (or later) stateless request, or "wrap".
func fuzzNoCall(f *testing.F, kind Transport) {
	for _, s := range noCallSeeds {
		for _, v := range []string{"", "2025-03-26", "2026-07-28", "wrap"} {
			f.Add([]byte(s), v)
		}
	}
	x := newNoCallHarness(f, kind)
	f.Fuzz(func(t *testing.T, body []byte, version string) {
		x.model.take()
		x.send(t, body, version)
		if leaked := x.model.take(); len(leaked) > 0 {
			t.Fatalf("tools/call reached the %s upstream without an allow: %q", kind, leaked)
		}
	})
}

func FuzzNoCallWithoutDecision(f *testing.F)          { fuzzNoCall(f, TransportStreamableHTTP) }
func FuzzNoCallWithoutDecisionStdio(f *testing.F)     { fuzzNoCall(f, TransportStdio) }
func FuzzNoCallWithoutDecisionSSE(f *testing.F)       { fuzzNoCall(f, TransportSSE) }
func FuzzNoCallWithoutDecisionWebSocket(f *testing.F) { fuzzNoCall(f, TransportWebSocket) }
