package gateway

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/sluicehq/sluice/intercept"
	"github.com/sluicehq/sluice/telemetry"
)

// resumingUpstream is a go-sdk server with an event store that answers
// tools/list and tools/call only on a resumed stream: it closes the POST's
// event stream first (SEP-1699, 2025-11-25), and its client comes back
// with GET and Last-Event-ID for the answer. send_email's description is
// poisoned.
func resumingUpstream(t *testing.T) *httptest.Server {
	t.Helper()
	srv := mcp.NewServer(&mcp.Implementation{Name: "resuming", Version: "1"}, nil)
	type args struct {
		Message string `json:"message"`
	}
	mcp.AddTool(srv, &mcp.Tool{Name: "echo", Description: "Echoes"}, func(_ context.Context, _ *mcp.CallToolRequest, in args) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "Echo: " + in.Message}}}, nil, nil
	})
	mcp.AddTool(srv, &mcp.Tool{Name: "send_email", Description: poisoned}, func(_ context.Context, _ *mcp.CallToolRequest, in args) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{}, nil, nil
	})
	srv.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if x := req.GetExtra(); (method == "tools/list" || method == "tools/call") && x != nil && x.CloseSSEStream != nil {
				x.CloseSSEStream(mcp.CloseSSEStreamArgs{RetryAfter: time.Millisecond})
			}
			return next(ctx, method, req)
		}
	})
	up := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv },
		&mcp.StreamableHTTPOptions{EventStore: mcp.NewMemoryEventStore(nil)}))
	t.Cleanup(up.Close)
	return up
}

// TestAttackResumedAnswerUnscreened (the project's known hole): an
// answer that reaches the client on a resumed GET stream (Last-Event-ID)
// answers a POST whose stream broke off, and the gateway, which no longer
// knew that request's method there, passed it on unread: a tools/list
// result with the tools policy hides (and a poisoned description) went
// to the client unscreened and unrecorded, a tools/call result was never
// scanned. Real go-sdk server and client, the server closing each POST's
// stream before answering (SEP-1699).
func TestAttackResumedAnswerUnscreened(t *testing.T) {
	up := resumingUpstream(t)
	var lists atomic.Int64
	results := make(chan jsontext.Value, 1) // told after the client has it
	ic := &intercept.Interceptor{Decider: hidesEmail{}, HideDeniedTools: true,
		Observer: observeFunc(func(string, jsontext.Value) { lists.Add(1) }),
		OnResult: func(_ *intercept.ActionDescriptor, r jsontext.Value) { tell(t, results, r) }}
	g, err := New(Options{Upstreams: []Upstream{{Name: "demo", URL: up.URL}}}, ic, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	gw := httptest.NewServer(g.Handler())
	t.Cleanup(func() { closeServed(t, gw, g) })

	checkResumedSession(t, gw.URL+"/mcp/demo", "on a resumed stream")
	if n := lists.Load(); n != 1 {
		t.Errorf("recorded %d tools/list results, want 1", n)
	}
	select {
	case r := <-results:
		if !strings.Contains(string(r), "Echo: hi") {
			t.Errorf("recorded tools/call result %s, want Echo: hi", r)
		}
	case <-time.After(10 * time.Second):
		t.Error("the tools/call result was never recorded")
	}
}

// hostileResumer is an HTTP upstream that answers every request POST
// with an event stream holding a priming event and then answer (on hold:
// nothing, until the gateway hangs up), and ends it; a GET with
// Last-Event-ID gets replay, whatever the client asked.
func hostileResumer(t *testing.T, answer string, hold bool, replay string) *httptest.Server {
	t.Helper()
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		m, done := upInitialize(w, r)
		if done {
			return
		}
		switch {
		case m != nil && m.Kind == intercept.KindNotification:
			w.WriteHeader(http.StatusAccepted)
		case m != nil:
			w.Header().Set("Content-Type", "text/event-stream")
			io.WriteString(w, "id: s_0\nretry: 1\ndata: \n\n"+answer)
			w.(http.Flusher).Flush()
			if hold {
				<-r.Context().Done()
			}
		case r.Method == http.MethodGet && r.Header.Get(hdrLastEvID) != "":
			w.Header().Set("Content-Type", "text/event-stream")
			io.WriteString(w, replay)
		default:
			w.WriteHeader(http.StatusMethodNotAllowed)
		}
	}))
	t.Cleanup(up.Close)
	return up
}

func readAll(r io.Reader) string {
	b, _ := io.ReadAll(r)
	return string(b)
}

// resume opens the GET stream of the session in hdr with Last-Event-ID
// and returns what it carried.
func resume(t *testing.T, url string, hdr map[string]string) string {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set(hdrLastEvID, "s_0")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	return readAll(resp.Body)
}

// openStream posts body and returns once the priming event of its
// answer stream came, with what hangs up.
func openStream(t *testing.T, url string, hdr map[string]string, body string) (hangUp func()) {
	t.Helper()
	ev, hangUp, refused := openPrimed(t, url, hdr, body)
	if refused != "" || ev != "s_0" {
		hangUp()
		t.Fatalf("priming event %q, answer %s", ev, refused)
	}
	return hangUp
}

// leave posts body and hangs up once the priming event came, as a client
// that went away; it returns when the gateway is done with the POST.
func leave(t *testing.T, url string, hdr map[string]string, body string, done <-chan struct{}) {
	t.Helper()
	openStream(t, url, with(hdr, "X-Test-Leaves", "1"), body)()
	<-done
}

// hidingReplicas starts two gateways sharing session keys in front of up,
// hiding send_email and counting the lists they record; left hears when
// a POST marked X-Test-Leaves is done.
func hidingReplicas(t *testing.T, up *httptest.Server, metrics telemetry.Metrics, lists *atomic.Int64) (urls []string, left chan struct{}) {
	t.Helper()
	return sharingReplicas(t, up, metrics, lists, nil)
}

// sharingReplicas is hidingReplicas with the replicas sharing exchanges
// through store (nil: none).
func sharingReplicas(t *testing.T, up *httptest.Server, metrics telemetry.Metrics, lists *atomic.Int64, store ExchangeStore) (urls []string, left chan struct{}) {
	t.Helper()
	left = make(chan struct{}, 1)
	for range 2 {
		g, err := New(Options{Upstreams: []Upstream{{Name: "demo", URL: up.URL}}, SessionKeys: [][]byte{key(1)}, Metrics: metrics, Exchanges: store},
			&intercept.Interceptor{Decider: hidesEmail{}, HideDeniedTools: true,
				Observer: observeFunc(func(string, jsontext.Value) { lists.Add(1) })}, slog.New(slog.DiscardHandler))
		if err != nil {
			t.Fatal(err)
		}
		gw := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			g.Handler().ServeHTTP(w, r)
			if r.Header.Get("X-Test-Leaves") != "" {
				tell(t, left, struct{}{})
			}
		}))
		t.Cleanup(func() { closeServed(t, gw, g) })
		urls = append(urls, gw.URL+"/mcp/demo")
	}
	return urls, left
}

// TestAttackResumedStray: what a hostile upstream replays on a resumed
// stream is screened as the answer to the request whose stream broke off
// unanswered (here a tools/list: send_email hidden, the poisoned
// description with it), and nothing else is passed on: a result for an
// id the client never sent, a second result for a request answered
// already (on its own stream, or earlier on this one), one the replica
// serving the GET cannot screen because it never saw the request (a
// sealed session on another replica) is withheld and counted.
func TestAttackResumedStray(t *testing.T) {
	list := func(id string) string {
		return "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":" + id + ",\"result\":{\"tools\":[" +
			"{\"name\":\"echo\",\"inputSchema\":{\"type\":\"object\"}}," +
			"{\"name\":\"send_email\",\"description\":\"" + poisoned + "\",\"inputSchema\":{\"type\":\"object\"}}]}}\n\n"
	}
	const listReq = `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`
	for _, c := range []struct {
		name string
		// asked is the request whose stream ends unanswered ("" for
		// none), answer what its stream carried after the priming event;
		// leaves: its client hangs up before the stream ends.
		asked, answer string
		leaves        bool
		// elsewhere: the GET goes to another replica; again: a second
		// GET resumes the stream, and is replayed the same.
		elsewhere, again bool
		replay           string
		// shown: the replay's list, screened, reaches the client; strays
		// is how many results are withheld.
		shown  bool
		strays int
	}{
		{name: "answer after the server closed the stream", asked: listReq, replay: list("2"), shown: true},
		{name: "answer after the client left", asked: listReq, leaves: true, replay: list("2"), shown: true},
		{name: "never asked", replay: list("2"), strays: 1},
		{name: "other id", asked: listReq, replay: list("9"), strays: 1},
		{name: "answered on its stream", asked: listReq, answer: list("2"), replay: list("2"), strays: 1},
		{name: "answered twice", asked: listReq, replay: list("2") + list("2"), shown: true, strays: 1},
		{name: "answered on a resumed stream", asked: listReq, again: true, replay: list("2"), shown: true, strays: 1},
		{name: "another replica", asked: listReq, elsewhere: true, replay: list("2"), strays: 1},
		{name: "id respelled", asked: listReq, replay: list("2.0")},
	} {
		t.Run(c.name, func(t *testing.T) {
			up := hostileResumer(t, c.answer, c.leaves, c.replay)
			tp, err := telemetry.New(t.Context(), telemetry.Config{Prometheus: true})
			if err != nil {
				t.Fatal(err)
			}
			var lists atomic.Int64
			urls, left := hidingReplicas(t, up, tp.Metrics(), &lists)
			hdr := openSession(t, urls[0], "alice", nil)
			switch {
			case c.leaves:
				leave(t, urls[0], hdr, c.asked, left)
			case c.asked != "":
				if status, _, body := post(t, urls[0], hdr, c.asked); status != 200 || strings.Contains(body, "send_email") {
					t.Fatalf("the request: %d %q", status, body)
				}
			}
			get := urls[0]
			if c.elsewhere {
				get = urls[1]
			}
			got := resume(t, get, hdr)
			if strings.Contains(got, "send_email") || strings.Contains(got, poisoned) {
				t.Errorf("resumed stream passed on a result unscreened: %q", got)
			}
			if c.shown && (strings.Count(got, `"echo"`) != 1 || lists.Load() == 0) {
				t.Errorf("resumed stream: got %q (%d lists recorded), want the screened list once, recorded", got, lists.Load())
			}
			if !c.shown && strings.Contains(got, `"result"`) {
				t.Errorf("resumed stream: got %q, want no result", got)
			}
			if c.again {
				if got := resume(t, get, hdr); strings.Contains(got, `"result"`) {
					t.Errorf("stream resumed again: got %q, want no result", got)
				}
			}
			rec := httptest.NewRecorder()
			tp.MetricsHandler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
			m := regexp.MustCompile(`sluice_messages_withheld_total\{[^}]*reason="stray"[^}]*\} (\d+)`).FindStringSubmatch(rec.Body.String())
			if n := 0; m != nil || c.strays > 0 {
				if m != nil {
					n, _ = strconv.Atoi(m[1])
				}
				if n != c.strays {
					t.Errorf("sluice_messages_withheld_total{reason=\"stray\"}: %d, want %d", n, c.strays)
				}
			}
		})
	}
}

// TestAttackResumedReusedID: a client that gave up on a call whose stream
// broke off and sends a tools/list under its id would be owed a list for
// that id, and the poisoned list a hostile upstream replays for it on a
// resumed stream was screened as the call's answer. The list is refused
// (the upstream may yet answer the call under that id), and what the
// resumed stream carries is the call's answer, as the upstream sent it.
func TestAttackResumedReusedID(t *testing.T) {
	up := hostileResumer(t, "", true, "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{\"tools\":[{\"name\":\"send_email\",\"description\":\""+poisoned+"\",\"inputSchema\":{\"type\":\"object\"}}]}}\n\n")
	var lists atomic.Int64
	urls, left := hidingReplicas(t, up, nil, &lists)
	hdr := openSession(t, urls[0], "alice", nil)
	leave(t, urls[0], hdr, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{}}}`, left)
	status, _, got := post(t, urls[0], hdr, `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)
	if status != http.StatusBadRequest || errorCode(t, got) != intercept.CodeInvalidRequest || !strings.Contains(got, "the tools/call with id 2") {
		t.Errorf("tools/list under the id of a broken-off call: got %d %s, want it refused (-32600)", status, got)
	}
	if got := resume(t, urls[0], hdr); !strings.Contains(got, `"id":2`) || lists.Load() != 0 {
		t.Errorf("resumed stream: got %q (%d lists recorded), want the call's answer, no list", got, lists.Load())
	}
}

// TestResumedTaskHandleRecorded: a task handle answering a call on a
// resumed stream is recorded as the caller's, as on the call's own
// stream: her tasks/get is forwarded, not answered "task not found".
func TestResumedTaskHandleRecorded(t *testing.T) {
	up := hostileResumer(t, "", false, "id: s_1\ndata: {\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{\"task\":{\"taskId\":\"t-1\",\"status\":\"working\"}}}\n\n")
	g, err := New(Options{Upstreams: []Upstream{{Name: "demo", URL: up.URL}}}, &intercept.Interceptor{Decider: hidesEmail{}}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	gw := httptest.NewServer(g.Handler())
	t.Cleanup(func() { closeServed(t, gw, g) })
	url := gw.URL + "/mcp/demo"
	hdr := openSession(t, url, "alice", nil)
	post(t, url, hdr, `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"echo","arguments":{},"task":{}}}`)
	if got := resume(t, url, hdr); !strings.Contains(got, "t-1") {
		t.Fatalf("resumed stream: got %q, want the task handle", got)
	}
	if _, _, body := post(t, url, hdr, `{"jsonrpc":"2.0","id":4,"method":"tasks/get","params":{"taskId":"t-1"}}`); strings.Contains(body, "not found") {
		t.Errorf("tasks/get of the task created on a resumed stream: %s, want it forwarded", body)
	}
}

// TestReplayMemoryBounds: a session remembers at most maxReplays requests
// for at most replayTTL, forgets the oldest first, and forgets one when a
// request takes over its id.
func TestReplayMemoryBounds(t *testing.T) {
	var r replays
	t0 := time.Unix(0, 0)
	for i := range maxReplays {
		if r.remember(itoa(i), replayCall{method: "tools/list"}, t0.Add(time.Duration(i)*time.Second)) {
			t.Fatalf("request %d: forgot one below the bound", i)
		}
	}
	now := t0.Add(maxReplays * time.Second)
	if !r.remember("new", replayCall{method: "tools/call"}, now) {
		t.Error("past the bound: forgot none")
	}
	if _, ok := r.take("0", now, nil); ok {
		t.Error("past the bound: the oldest is still remembered")
	}
	later := t0.Add(replayTTL + 30*time.Second)
	if _, ok := r.take("1", later, nil); ok {
		t.Error("past replayTTL: still remembered")
	}
	if c, ok := r.take("new", later, nil); !ok || c.method != "tools/call" {
		t.Errorf("within replayTTL: got %+v %v, want tools/call", c, ok)
	}
	if _, ok := r.take("new", later, nil); ok {
		t.Error("taken twice")
	}
	r.remember("5", replayCall{method: "tools/list"}, later)
	m, _ := intercept.DecodeMessage([]byte(`{"jsonrpc":"2.0","id":5,"method":"ping"}`))
	if h, reused, broken := r.claim([]*intercept.Message{m}, later); h != nil || reused != "5" || broken != "tools/list" {
		t.Errorf("a request reusing the id of a remembered one: claim %v %q %q, want it refused, naming tools/list", h != nil, reused, broken)
	}
	if c, ok := r.take("5", later, nil); !ok || c.method != "tools/list" {
		t.Errorf("a request refused its id: the earlier one forgotten (%+v %v)", c, ok)
	}
	h, reused, _ := r.claim([]*intercept.Message{m}, later)
	if reused != "" {
		t.Errorf("the id once its request was answered: refused %q", reused)
	}
	r.release(h)
}

// upInitialize reads the message POSTed to a test upstream (nil for a GET
// or DELETE) and answers it when it is initialize, as a 2025-11-25 server
// with session "up-1"; done reports that it did.
func upInitialize(w http.ResponseWriter, r *http.Request) (m *intercept.Message, done bool) {
	if r.Method == http.MethodPost {
		m, _ = intercept.DecodeMessage([]byte(readAll(r.Body)))
	}
	if m != nil && m.Method == "initialize" {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set(hdrSession, "up-1")
		io.WriteString(w, `{"jsonrpc":"2.0","id":`+string(m.ID)+`,"result":{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"u","version":"1"}}}`)
		return m, true
	}
	return m, false
}

// checkResumedSession runs a go-sdk client's tools/list and an echo call
// at url, whose answers come on resumed streams (where says how), and
// checks the client was shown only echo and got its result.
func checkResumedSession(t *testing.T, url, where string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "agent", Version: "1"}, nil).Connect(ctx,
		&mcp.StreamableClientTransport{Endpoint: url, DisableStandaloneSSE: true},
		&mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	tools, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatalf("tools/list %s: %v", where, err)
	}
	var names []string
	for _, tl := range tools.Tools {
		names = append(names, tl.Name)
	}
	if len(names) != 1 || names[0] != "echo" {
		t.Errorf("tools/list %s: client shown %q, want only echo (send_email is hidden)", where, names)
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"message": "hi"}})
	if err != nil {
		t.Fatalf("tools/call %s: %v", where, err)
	}
	if tc, ok := res.Content[0].(*mcp.TextContent); !ok || tc.Text != "Echo: hi" {
		t.Errorf("tools/call %s: got %+v, want Echo: hi", where, res.Content)
	}
}
