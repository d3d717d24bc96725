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
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/sluicehq/sluice/gateway/transport"
	"github.com/sluicehq/sluice/intercept"
	"github.com/sluicehq/sluice/telemetry"
)

// routingUpstream is a 2025-11-25 HTTP upstream that sends each answer
// on the event stream of the last POST that carried its id, as the MCP
// TypeScript SDK's server does (one map from request id to stream), and
// ends a stream after one answer. It answers a list only after the
// request that follows it, as a server answering concurrently may; listed
// hears of each list held. Lists hold another's task and send_email.
func routingUpstream(t *testing.T, listed chan<- struct{}) *httptest.Server {
	t.Helper()
	var mu sync.Mutex
	streams := map[string]chan string{} // by IDKey: the last POST's
	var held *intercept.Message         // a list not answered yet
	answer := func(m *intercept.Message) string {
		res := `{}`
		switch m.Method {
		case "tasks/list":
			res = `{"tasks":[{"taskId":"someone-elses","status":"working","statusMessage":"secret"}]}`
		case "tools/list":
			res = `{"tools":[{"name":"send_email","description":"` + poisoned + `","inputSchema":{"type":"object"}}]}`
		}
		return `{"jsonrpc":"2.0","id":` + string(m.ID) + `,"result":` + res + `}`
	}
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		m, done := upInitialize(w, r)
		if done {
			return
		}
		switch {
		case m == nil || m.Kind != intercept.KindRequest:
			w.WriteHeader(http.StatusAccepted)
			return
		}
		ch := make(chan string, 2)
		mu.Lock()
		streams[m.IDKey()] = ch
		if m.Method == "tasks/list" || m.Method == "tools/list" {
			held = m
			tell(t, listed, struct{}{})
		} else {
			if held != nil {
				streams[held.IDKey()] <- answer(held)
				held = nil
			}
			streams[m.IDKey()] <- answer(m)
		}
		mu.Unlock()
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		w.(http.Flusher).Flush()
		select {
		case a := <-ch:
			io.WriteString(w, "event: message\ndata: "+a+"\n\n")
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(up.Close)
	return up
}

// TestAttackReusedIDOnHTTPUpstream (found by a review): on Streamable HTTP
// to an HTTP upstream, an agent sends a tasks/list (or tools/list) and,
// while it waits, a ping under the same id in another POST of the
// session. An upstream that routes answers by id sends the list's answer
// on the ping's stream, where the gateway screened it as the ping's:
// another agent's task, or a hidden tool and its poisoned description,
// reached the agent. The ping is refused (-32600) as on the other paths.
func TestAttackReusedIDOnHTTPUpstream(t *testing.T) {
	for _, c := range []struct{ list, ids0, ids1 string }{
		{"tasks/list", `1`, `1`},
		{"tasks/list", `"a\u0062"`, `"ab"`},
		{"tools/list", `1`, `1`},
	} {
		t.Run(c.list+","+c.ids0+","+c.ids1, func(t *testing.T) {
			listed := make(chan struct{}, 1)
			up := routingUpstream(t, listed)
			g, err := New(Options{Upstreams: []Upstream{{Name: "u", URL: up.URL}}},
				&intercept.Interceptor{Decider: hidesEmail{}, HideDeniedTools: true}, slog.New(slog.DiscardHandler))
			if err != nil {
				t.Fatal(err)
			}
			gw := httptest.NewServer(g.Handler())
			t.Cleanup(func() { closeServed(t, gw, g) })
			url := gw.URL + "/mcp/u"
			hdr := openSession(t, url, "alice", nil)
			ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
			defer cancel()
			first := make(chan string, 1)
			go func() {
				req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(`{"jsonrpc":"2.0","id":`+c.ids0+`,"method":"`+c.list+`"}`))
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Accept", "application/json, text/event-stream")
				for k, v := range hdr {
					req.Header.Set(k, v)
				}
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					first <- ""
					return
				}
				defer resp.Body.Close()
				first <- readAll(resp.Body)
			}()
			select {
			case <-listed:
			case <-ctx.Done():
				t.Fatal("the upstream never got the list")
			}
			status, _, got := post(t, url, hdr, `{"jsonrpc":"2.0","id":`+c.ids1+`,"method":"ping"}`)
			if strings.Contains(got, "someone-elses") || strings.Contains(got, "send_email") || strings.Contains(got, poisoned) {
				t.Errorf("ping: got %s, want the list screened (or the ping refused)", got)
			}
			if status != http.StatusBadRequest || errorCode(t, got) != intercept.CodeInvalidRequest || !strings.Contains(got, "still waiting") {
				t.Errorf("ping reusing the waiting list's id: got %d %s, want it refused (-32600)", status, got)
			}
			cancel()
			if got := <-first; strings.Contains(got, "someone-elses") || strings.Contains(got, "send_email") {
				t.Errorf("%s: got %s, want it screened", c.list, got)
			}
		})
	}
}

// eventStoreUpstream is a 2025-11-25 HTTP upstream with an event store,
// as go-sdk's and mcp-go's servers may have: each request POST gets an
// event stream of its own, primed with an event id (s_1, s_2, …) and held
// until the gateway hangs up; a GET whose Last-Event-ID is that id is
// replayed the request's answer (and held open, with X-Test-Hold). Its
// tools/list names send_email with a
// poisoned description. It does not refuse an id in use (go-sdk does).
func eventStoreUpstream(t *testing.T) *httptest.Server {
	t.Helper()
	var mu sync.Mutex
	answers := map[string]string{} // by stream
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		m, done := upInitialize(w, r)
		if done {
			return
		}
		switch {
		case m != nil && m.Kind != intercept.KindRequest:
			w.WriteHeader(http.StatusAccepted)
		case m != nil:
			res := `{}`
			if m.Method == "tools/list" {
				res = `{"tools":[{"name":"echo","inputSchema":{"type":"object"}},{"name":"send_email","description":"` + poisoned + `","inputSchema":{"type":"object"}}]}`
			}
			mu.Lock()
			stream := "s_" + strconv.Itoa(len(answers)+1)
			answers[stream] = `{"jsonrpc":"2.0","id":` + string(m.ID) + `,"result":` + res + `}`
			mu.Unlock()
			w.Header().Set("Content-Type", "text/event-stream")
			io.WriteString(w, "id: "+stream+"\nretry: 1\ndata: \n\n")
			w.(http.Flusher).Flush()
			<-r.Context().Done()
		case r.Method == http.MethodGet && r.Header.Get(hdrLastEvID) != "":
			mu.Lock()
			a := answers[r.Header.Get(hdrLastEvID)]
			mu.Unlock()
			w.Header().Set("Content-Type", "text/event-stream")
			if a != "" {
				io.WriteString(w, "id: "+r.Header.Get(hdrLastEvID)+"-1\nevent: message\ndata: "+a+"\n\n")
			}
			if r.Header.Get("X-Test-Hold") != "" {
				w.(http.Flusher).Flush()
				<-r.Context().Done()
			}
		default:
			w.WriteHeader(http.StatusMethodNotAllowed)
		}
	}))
	t.Cleanup(up.Close)
	return up
}

// openPrimed posts body and returns the id of the priming event of its
// answer stream, with what hangs up; refused is the answer instead when
// it is no event stream.
func openPrimed(t *testing.T, url string, hdr map[string]string, body string) (event string, hangUp func(), refused string) {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	hangUp = func() { cancel(); resp.Body.Close() }
	if !isEventStream(resp.Header) {
		defer hangUp()
		return "", func() {}, readAll(resp.Body)
	}
	ev, err := transport.NewSSEReader(resp.Body).Next()
	if err != nil || ev.ID == "" {
		hangUp()
		t.Fatalf("priming event: %+v %v", ev, err)
	}
	return ev.ID, hangUp, ""
}

// resumeFrom opens the GET stream of the session in hdr with Last-Event-ID
// event and returns what it carried.
func resumeFrom(t *testing.T, url string, hdr map[string]string, event string) string {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set(hdrLastEvID, event)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	return readAll(resp.Body)
}

// TestAttackReusedIDRememberedAsOld (found by a review): an agent sends a
// ping and, while its stream is open, a tools/list under the same id, and
// hangs up on the list and then on the ping. Each stream's end had the
// session remember the id with its request's method, the ping's last:
// when the agent resumed the list's stream, the upstream's replayed list
// was screened as the ping's answer, and send_email, hidden, and its
// poisoned description reached the agent, unrecorded. The list is
// refused (-32600) while the ping waits, and its id is free again once
// the ping's exchange ended.
func TestAttackReusedIDRememberedAsOld(t *testing.T) {
	up := eventStoreUpstream(t)
	var lists atomic.Int64
	urls, left := hidingReplicas(t, up, nil, &lists)
	url := urls[0]
	hdr := openSession(t, url, "alice", nil)
	leaves := with(hdr, "X-Test-Leaves", "1")
	pinged, hangUpPing, refused := openPrimed(t, url, leaves, `{"jsonrpc":"2.0","id":2,"method":"ping"}`)
	if refused != "" {
		t.Fatalf("ping: %s", refused)
	}
	event, hangUpList, refused := openPrimed(t, url, leaves, `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)
	hangUpList()
	<-left
	hangUpPing()
	<-left
	if refused == "" {
		got := resumeFrom(t, url, hdr, event)
		if strings.Contains(got, "send_email") || strings.Contains(got, poisoned) {
			t.Errorf("the list's resumed stream: got %q, want the list screened (or the list refused)", got)
		}
		return
	}
	if errorCode(t, refused) != intercept.CodeInvalidRequest || !strings.Contains(refused, "still waiting") {
		t.Errorf("tools/list reusing the waiting ping's id: got %s, want it refused (-32600)", refused)
	}
	// The ping's stream broke off: its id is the ping's until the
	// upstream's answer is resumed.
	if _, _, refused := openPrimed(t, url, hdr, `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`); !strings.Contains(refused, "the ping with id 2") {
		t.Errorf("tools/list under the broken-off ping's id: got %q, want it refused", refused)
	}
	if got := resumeFrom(t, url, hdr, pinged); !strings.Contains(got, `"id":2`) {
		t.Fatalf("the ping's resumed stream: got %q, want its answer", got)
	}
	event, hangUpList, refused = openPrimed(t, url, leaves, `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)
	if refused != "" {
		t.Fatalf("tools/list once the ping was answered: %s, want it sent", refused)
	}
	hangUpList()
	<-left
	if got := resumeFrom(t, url, hdr, event); strings.Contains(got, "send_email") || strings.Count(got, `"echo"`) != 1 {
		t.Errorf("the list's resumed stream: got %q, want the list screened", got)
	}
}

// TestAttackReusedIDWhileResumed: the same with the ping answered on a
// resumed stream still open. A stream the client leaves remembers again
// every request it answered (the client may not have read the answer),
// the ping too, after the list's stream remembered the id: a request
// under an id a resumed stream answers is refused until it ends.
func TestAttackReusedIDWhileResumed(t *testing.T) {
	up := eventStoreUpstream(t)
	var lists atomic.Int64
	urls, left := hidingReplicas(t, up, nil, &lists)
	url := urls[0]
	hdr := openSession(t, url, "alice", nil)
	leaves := with(hdr, "X-Test-Leaves", "1")
	pinged, hangUp, refused := openPrimed(t, url, leaves, `{"jsonrpc":"2.0","id":2,"method":"ping"}`)
	if refused != "" {
		t.Fatalf("ping: %s", refused)
	}
	hangUp()
	<-left
	ctx, cancel := context.WithCancel(t.Context())
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	for k, v := range with(leaves, "Accept", "text/event-stream", hdrLastEvID, pinged, "X-Test-Hold", "1") {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	if ev, err := transport.NewSSEReader(resp.Body).Next(); err != nil || !strings.Contains(string(ev.Data), `"id":2`) {
		cancel()
		t.Fatalf("resumed stream: %+v %v, want the ping's answer", ev, err)
	}
	event, hangUpList, refused := openPrimed(t, url, leaves, `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)
	hangUpList()
	<-left
	cancel()
	resp.Body.Close()
	<-left
	if refused == "" {
		got := resumeFrom(t, url, hdr, event)
		if strings.Contains(got, "send_email") || strings.Contains(got, poisoned) {
			t.Errorf("the list's resumed stream: got %q, want the list screened (or the list refused)", got)
		}
		return
	}
	if errorCode(t, refused) != intercept.CodeInvalidRequest {
		t.Errorf("tools/list reusing the id a resumed stream answers: got %s, want it refused (-32600)", refused)
	}
	// The client left the resumed stream, which may not have reached it:
	// the ping is remembered again, and its id still the ping's.
	if _, hangUp, refused := openPrimed(t, url, leaves, `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`); refused == "" {
		hangUp()
		<-left
		t.Error("tools/list once the resumed stream was left: sent, want it refused")
	} else if !strings.Contains(refused, "the ping with id 2") {
		t.Errorf("tools/list once the resumed stream was left: got %s, want it refused, naming the ping", refused)
	}
}

// TestWaitingIDsReleased: an id a session's open exchange waits on (a
// POST's request, or one a resumed stream took from the memory of broken
// streams) is refused to any other exchange until that one ends, and
// nothing of it is kept after.
func TestWaitingIDsReleased(t *testing.T) {
	var r replays
	msgs := func(body string) []*intercept.Message {
		ms, _, err := intercept.Decode([]byte(body))
		if err != nil {
			t.Fatal(err)
		}
		return ms
	}
	now := time.Unix(0, 0)
	r.remember(`"b"`, replayCall{method: "ping"}, now)
	if _, reused, broken := r.claim(msgs(`{"jsonrpc":"2.0","id":"b","method":"ping"}`), now); reused != `"b"` || broken != "ping" {
		t.Errorf("claim of an id remembered for a resumed stream: refused %q %q, want \"b\", ping", reused, broken)
	}
	r.remember(`"b"`, replayCall{method: "ping"}, now.Add(-replayTTL-time.Second)) // forgotten by now
	a, reused, _ := r.claim(msgs(`[{"jsonrpc":"2.0","id":1,"method":"tools/list"},{"jsonrpc":"2.0","id":"b","method":"ping"},{"jsonrpc":"2.0","method":"notifications/x"}]`), now)
	if reused != "" {
		t.Fatalf("first claim: refused %s", reused)
	}
	if _, ok := r.take(`"b"`, now, nil); ok {
		t.Error("an id claimed anew is still remembered for a resumed stream")
	}
	if _, reused, _ := r.claim(msgs(`{"jsonrpc":"2.0","id":"\u0062","method":"ping"}`), now); reused != `"b"` {
		t.Errorf("claim of a waiting id respelled: refused %q, want \"b\"", reused)
	}
	if _, reused, _ := r.claim(msgs(`[{"jsonrpc":"2.0","id":7,"method":"ping"},{"jsonrpc":"2.0","id":1,"method":"ping"}]`), now); reused != "1" {
		t.Errorf("batch with a waiting id: refused %q, want 1", reused)
	}
	if h, reused, _ := r.claim(msgs(`{"jsonrpc":"2.0","id":7,"method":"ping"}`), now); reused != "" {
		t.Errorf("id 7, of a batch refused: refused %s, want it free", reused)
	} else {
		r.release(h)
	}
	r.remember("1", replayCall{method: "tools/list"}, now) // its stream broke off
	r.release(a)
	if _, reused, _ := r.claim(msgs(`{"jsonrpc":"2.0","id":"b","method":"ping"}`), now); reused != "" {
		t.Errorf("after its exchange ended: %s still refused", reused)
	}
	g := new(hold) // a resumed stream's
	if c, ok := r.take("1", now, g); !ok || c.method != "tools/list" {
		t.Fatalf("take: %+v %v", c, ok)
	}
	if _, reused, _ := r.claim(msgs(`{"jsonrpc":"2.0","id":1,"method":"ping"}`), now); reused != "1" {
		t.Errorf("an id a resumed stream answers: refused %q, want 1", reused)
	}
	r.release(g)
	r.release(nil)
	h, reused, _ := r.claim(msgs(`{"jsonrpc":"2.0","id":1,"method":"ping"}`), now)
	if reused != "" {
		t.Errorf("after the resumed stream ended: %s still refused", reused)
	}
	r.release(h)
	r.mu.Lock()
	defer r.mu.Unlock()
	if n := len(r.open); n != 1 { // "b", never released
		t.Errorf("%d ids still held, want 1", n)
	}
}

// TestAttackStrayErrorAfterList (found by a review): after a tools/list
// is answered on a POST's event stream, an error response for an id not
// asked was passed on as an empty batch `[]`, which a client may fail on;
// on any stream or JSON answer, so was one naming a taskId (the call's
// own result lost with it in a JSON batch). A stray on a list's stream is
// withheld and counted, and a message there the gateway cannot read is
// not passed on once the list is answered either; a stray error elsewhere
// passes as sent, as before.
func TestAttackStrayErrorAfterList(t *testing.T) {
	const (
		list  = `{"jsonrpc":"2.0","id":2,"result":{"tools":[{"name":"echo","inputSchema":{"type":"object"}}]}}`
		call  = `{"jsonrpc":"2.0","id":2,"result":{"content":[{"type":"text","text":"Echo: hi"}]}}`
		stray = `{"jsonrpc":"2.0","id":9,"error":{"code":-32603,"message":"boom"}}`
		task  = `{"jsonrpc":"2.0","id":9,"error":{"code":-32602,"message":"no such task","data":{"taskId":"t-9"}}}`
		// A second list, under the list's id spelled otherwise.
		respelled = `{"jsonrpc":"2.0","id":2.0,"result":{"tools":[{"name":"send_email","inputSchema":{"type":"object"}}]}}`
	)
	events := func(ms ...string) string {
		var b strings.Builder
		for _, m := range ms {
			b.WriteString("event: message\ndata: " + m + "\n\n")
		}
		return b.String()
	}
	for _, c := range []struct {
		name, request, ct, answer string
		want                      string // what the client gets
		strays                    int
		hidden                    string // what it must not get
	}{
		{"list stream", `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`, "text/event-stream", events(list, stray), `"echo"`, 1, ""},
		{"list stream, taskId", `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`, "text/event-stream", events(list, task), `"echo"`, 1, ""},
		{"list stream, batch", `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`, "text/event-stream", events(list, "["+stray+"]"), `"echo"`, 1, ""},
		{"list stream, unreadable after", `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`, "text/event-stream", events(list, respelled), `"echo"`, 0, "send_email"},
		{"call stream, taskId", `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{}}}`, "text/event-stream", events(call, task), "t-9", 0, ""},
		{"JSON call answer, taskId", `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{}}}`, "application/json", "[" + call + "," + task + "]", "t-9", 0, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				m, _ := intercept.DecodeMessage([]byte(readAll(r.Body)))
				switch {
				case m != nil && m.Method == "initialize":
					w.Header().Set("Content-Type", "application/json")
					w.Header().Set(hdrSession, "up-1")
					io.WriteString(w, `{"jsonrpc":"2.0","id":`+string(m.ID)+`,"result":{"protocolVersion":"2025-03-26","capabilities":{"tools":{}},"serverInfo":{"name":"u","version":"1"}}}`)
				case m != nil && m.Kind == intercept.KindRequest:
					w.Header().Set("Content-Type", c.ct)
					io.WriteString(w, c.answer)
				default:
					w.WriteHeader(http.StatusAccepted)
				}
			}))
			t.Cleanup(up.Close)
			tp, err := telemetry.New(t.Context(), telemetry.Config{Prometheus: true})
			if err != nil {
				t.Fatal(err)
			}
			g, err := New(Options{Upstreams: []Upstream{{Name: "u", URL: up.URL}}, Metrics: tp.Metrics()},
				&intercept.Interceptor{Decider: allowEcho}, slog.New(slog.DiscardHandler))
			if err != nil {
				t.Fatal(err)
			}
			gw := httptest.NewServer(g.Handler())
			t.Cleanup(func() { closeServed(t, gw, g) })
			url := gw.URL + "/mcp/u"
			_, h, body := post(t, url, nil, `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-03-26","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}`)
			if h.Get(hdrSession) == "" {
				t.Fatalf("initialize: %s", body)
			}
			_, _, got := post(t, url, map[string]string{hdrSession: h.Get(hdrSession), hdrVersion: "2025-03-26"}, c.request)
			if strings.Contains(got, "data: []") || strings.TrimSpace(got) == "[]" {
				t.Errorf("got %q, want no empty batch", got)
			}
			if !strings.Contains(got, c.want) || c.hidden != "" && strings.Contains(got, c.hidden) {
				t.Errorf("got %q, want %s in it and not %q", got, c.want, c.hidden)
			}
			rec := httptest.NewRecorder()
			tp.MetricsHandler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
			n := 0
			if m := regexp.MustCompile(`sluice_messages_withheld_total\{[^}]*reason="stray"[^}]*\} (\d+)`).FindStringSubmatch(rec.Body.String()); m != nil {
				n, _ = strconv.Atoi(m[1])
			}
			if n != c.strays {
				t.Errorf("sluice_messages_withheld_total{reason=\"stray\"}: %d, want %d", n, c.strays)
			}
		})
	}
}

// TestStrayErrorOnGetStreamClient: an error response for no request,
// naming a taskId, on the GET stream reached the client as `[]`, which
// go-sdk's client cannot decode: it failed the whole session. Real go-sdk
// client.
func TestStrayErrorOnGetStreamClient(t *testing.T) {
	sent := make(chan struct{})
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		m, done := upInitialize(w, r)
		if done {
			return
		}
		switch {
		case m != nil && m.Kind == intercept.KindRequest:
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"jsonrpc":"2.0","id":`+string(m.ID)+`,"result":{"tools":[{"name":"echo","inputSchema":{"type":"object"}}]}}`)
		case r.Method == http.MethodGet:
			w.Header().Set("Content-Type", "text/event-stream")
			io.WriteString(w, "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":9,\"error\":{\"code\":-32602,\"message\":\"no such task\",\"data\":{\"taskId\":\"t-9\"}}}\n\n")
			w.(http.Flusher).Flush()
			close(sent)
			<-r.Context().Done()
		default:
			w.WriteHeader(http.StatusAccepted)
		}
	}))
	t.Cleanup(up.Close)
	g, err := New(Options{Upstreams: []Upstream{{Name: "u", URL: up.URL}}}, &intercept.Interceptor{Decider: allowEcho}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	gw := httptest.NewServer(g.Handler())
	t.Cleanup(func() { closeServed(t, gw, g) })
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "agent", Version: "1"}, nil).Connect(ctx,
		&mcp.StreamableClientTransport{Endpoint: gw.URL + "/mcp/u"}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	select {
	case <-sent:
	case <-ctx.Done():
		t.Fatal("the client never opened the GET stream")
	}
	time.Sleep(100 * time.Millisecond) // for the client to read it
	if _, err := cs.ListTools(ctx, nil); err != nil {
		t.Errorf("tools/list after a stray error on the GET stream: %v", err)
	}
}
