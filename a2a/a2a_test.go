package a2a

import (
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/sluicehq/sluice/intercept"
)

// stubAgent is an A2A agent that answers every request with a completed
// task and counts the requests that reach it; card is its card (with
// BASE replaced by its URL).
func stubAgent(t *testing.T, card string) (*httptest.Server, *atomic.Int32) {
	t.Helper()
	var posts atomic.Int32
	var srv *httptest.Server
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet {
			io.WriteString(w, strings.ReplaceAll(card, "BASE", srv.URL))
			return
		}
		posts.Add(1)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"jsonrpc":"2.0","id":1,"result":{"kind":"task","id":"t1","contextId":"c1","status":{"state":"completed"}}}`)
	}))
	t.Cleanup(srv.Close)
	return srv, &posts
}

const goodCard = `{"name":"stub","url":"BASE/rpc","preferredTransport":"JSONRPC","protocolVersion":"0.3","skills":[{"id":"echo","description":"Echo."}],
"supportedInterfaces":[{"url":"BASE/rpc","protocolBinding":"JSONRPC","protocolVersion":"1.0"},{"url":"BASE/rest","protocolBinding":"HTTP+JSON","protocolVersion":"1.0"}]}`

func serve(t *testing.T, dec intercept.Decider, agentURL string, opts Options, observer ...intercept.ToolsObserver) *httptest.Server {
	t.Helper()
	opts.Agents = []Agent{{Name: "stub", URL: agentURL}}
	ic := &intercept.Interceptor{Decider: dec}
	if len(observer) > 0 {
		ic.Observer = observer[0]
	}
	g, err := New(opts, ic)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(g.Handler())
	t.Cleanup(srv.Close)
	return srv
}

func post(t *testing.T, url, version, body string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	if version != "" {
		req.Header.Set("A2A-Version", version)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

var allow = &intercept.StaticDecider{Default: intercept.Allow}

// Bad input gets a clear JSON-RPC error and never reaches the agent.
func TestBadInputNotForwarded(t *testing.T) {
	agent, posts := stubAgent(t, goodCard)
	gw := serve(t, allow, agent.URL, Options{MaxBody: 4096, MaxPart: 16})
	send := func(parts string) string {
		return `{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":{"kind":"message","messageId":"m","role":"user","parts":` + parts + `}}}`
	}
	for _, c := range []struct{ name, version, body, want string }{
		{"not JSON", "", `{"jsonrpc":`, "-32700"},
		{"duplicate member", "", `{"jsonrpc":"2.0","id":1,"method":"message/send","method":"tasks/get","params":{}}`, "-32600"},
		{"a response", "", `{"jsonrpc":"2.0","id":1,"result":{}}`, "requests only"},
		{"unknown method", "", `{"jsonrpc":"2.0","id":1,"method":"tasks/delete","params":{}}`, "-32601"},
		{"1.0 method without the header", "", `{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"parts":[]}}}`, "A2A-Version"},
		{"0.3 method with the 1.0 header", "1.0", send(`[{"kind":"text","text":"hi"}]`), "A2A-Version"},
		{"unsupported version", "2.0", send(`[]`), "-32009"},
		{"params not an object", "", `{"jsonrpc":"2.0","id":1,"method":"message/send","params":[1]}`, "-32602"},
		{"parts not an array", "", send(`{"text":"hi"}`), "message.parts must be an array"},
		{"text not a string", "", send(`[{"kind":"text","text":7}]`), "text must be a string"},
		{"invalid base64", "", send(`[{"kind":"file","file":{"bytes":"not base64!","mimeType":"text/plain"}}]`), "not valid base64"},
		{"oversized file part", "", send(`[{"kind":"file","file":{"bytes":"` + strings.Repeat("QUFB", 20) + `"}}]`), "file larger than 16 bytes"},
		{"empty part", "", send(`[{"kind":"mystery"}]`), "not a text, data or file part"},
		{"oversized request", "", send(`[{"kind":"text","text":"` + strings.Repeat("a", 5000) + `"}]`), "larger than 4096 bytes"},
		{"push URL to loopback", "", `{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":{"kind":"message","messageId":"m","role":"user","parts":[{"kind":"text","text":"hi"}]},"configuration":{"pushNotificationConfig":{"url":"http://127.0.0.1:9/hook"}}}}`, "loopback"},
		{"push URL to a private address", "", `{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":{"kind":"message","messageId":"m","role":"user","parts":[{"kind":"text","text":"hi"}]},"configuration":{"pushNotificationConfig":{"url":"http://10.1.2.3/hook"}}}}`, "private"},
		{"someone else's task", "", `{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{"id":"t-unknown"}}`, "task not found"},
		{"task without id", "1.0", `{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{}}`, "needs the task's id"},
	} {
		_, got := post(t, gw.URL+"/a2a/stub", c.version, c.body)
		if !strings.Contains(got, c.want) || !strings.Contains(got, `"error"`) {
			t.Errorf("%s: got %s, want an error with %q", c.name, got, c.want)
		}
	}
	if n := posts.Load(); n != 0 {
		t.Errorf("%d bad requests reached the agent", n)
	}
	if _, got := post(t, gw.URL+"/a2a/stub", "", send(`[{"kind":"text","text":"hi"},{"kind":"file","file":{"bytes":"QUFB"}}]`)); !strings.Contains(got, `"completed"`) || posts.Load() != 1 {
		t.Errorf("a good message: got %s (%d posts)", got, posts.Load())
	}
	if _, got := post(t, gw.URL+"/a2a/nobody", "", send(`[]`)); !strings.Contains(got, `no A2A agent named \"nobody\"`) {
		t.Errorf("unknown agent: %s", got)
	}
}

// The card is rewritten to the gateway, keeps its JSON-RPC interfaces and
// its 1.0 HTTP+JSON one (served by translation at /rest), and
// loses the upstream signatures the rewrite breaks; a card that is not
// JSON or names an interface elsewhere is refused with an event.
func TestCardRewriteAndRefusal(t *testing.T) {
	agent, _ := stubAgent(t, goodCard)
	gw := serve(t, allow, agent.URL, Options{})
	resp, err := http.Get(gw.URL + "/a2a/stub/.well-known/agent-card.json")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	card := string(b)
	for _, want := range []string{`"url":"` + gw.URL + `/a2a/stub"`, `"protocolBinding":"JSONRPC"`, `"protocolBinding":"HTTP+JSON","protocolVersion":"1.0","url":"` + gw.URL + `/a2a/stub/rest"`} {
		if !strings.Contains(card, want) {
			t.Errorf("card %s lacks %s", card, want)
		}
	}
	for _, not := range []string{agent.URL, "signatures"} {
		if strings.Contains(card, not) {
			t.Errorf("card %s still has %s", card, not)
		}
	}

	for name, bad := range map[string]string{
		"not JSON":         `<html>hello</html>`,
		"points elsewhere": `{"name":"x","url":"https://evil.example/rpc","protocolVersion":"0.3"}`,
		"no JSON-RPC":      `{"name":"x","supportedInterfaces":[{"url":"BASE/g","protocolBinding":"GRPC","protocolVersion":"1.0"}]}`,
	} {
		agent, posts := stubAgent(t, bad)
		var refused []string
		gw := serve(t, allow, agent.URL, Options{OnCardRefused: func(a, reason string) { refused = append(refused, reason) }})
		r, err := http.Get(gw.URL + "/a2a/stub/.well-known/agent-card.json")
		if err != nil {
			t.Fatal(err)
		}
		r.Body.Close()
		if r.StatusCode != http.StatusBadGateway || len(refused) == 0 {
			t.Errorf("%s: status %d, refusals %q; want 502 and an event", name, r.StatusCode, refused)
		}
		if _, got := post(t, gw.URL+"/a2a/stub", "", `{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":{"kind":"message","messageId":"m","role":"user","parts":[{"kind":"text","text":"hi"}]}}}`); !strings.Contains(got, "card") || posts.Load() != 0 {
			t.Errorf("%s: a message went %s (%d posts); want an error naming the card", name, got, posts.Load())
		}
	}
}

// Deny rendering: throw mode is a JSON-RPC error with the envelope; the
// tool_result mode a task in state rejected, in the version's own shape.
func TestDenyRendering(t *testing.T) {
	agent, posts := stubAgent(t, goodCard)
	for _, c := range []struct {
		mode          intercept.ResultMode
		version, body string
		want          []string
	}{
		{intercept.ModeThrow, "", `{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":{"kind":"message","messageId":"m","role":"user","parts":[{"kind":"text","text":"hi"}]}}}`,
			[]string{`"error"`, `"code":-32090`, `"status":"denied"`, `"code":"static_default"`, `"txn_id"`}},
		{intercept.ModeToolResult, "", `{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":{"kind":"message","messageId":"m","role":"user","parts":[{"kind":"text","text":"hi"}]}}}`,
			[]string{`"state":"rejected"`, `"kind":"data"`, `"status":"denied"`, `"txn_id"`}},
		{intercept.ModeToolResult, "1.0", `{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"m","role":"ROLE_USER","parts":[{"text":"hi"}]}}}`,
			[]string{`"state":"TASK_STATE_REJECTED"`, `"data":{`, `"role":"ROLE_AGENT"`}},
		{intercept.ModeToolResult, "1.0", `{"jsonrpc":"2.0","id":1,"method":"SendStreamingMessage","params":{"message":{"messageId":"m","role":"ROLE_USER","parts":[{"text":"hi"}]}}}`,
			[]string{"data: {", `"TASK_STATE_REJECTED"`}},
	} {
		gw := serve(t, &intercept.StaticDecider{Default: intercept.Deny, Mode: c.mode}, agent.URL, Options{})
		_, got := post(t, gw.URL+"/a2a/stub", c.version, c.body)
		for _, w := range c.want {
			if !strings.Contains(got, w) {
				t.Errorf("%s %s: %s lacks %s", c.mode, c.version, got, w)
			}
		}
	}
	if posts.Load() != 0 {
		t.Errorf("%d denied messages reached the agent", posts.Load())
	}
}

// The card names the gateway as the client reached it: X-Forwarded-Proto
// and -Host count only from a trusted proxy.
func TestCardBehindProxy(t *testing.T) {
	agent, _ := stubAgent(t, goodCard)
	get := func(trusted []netip.Prefix) string {
		gw := serve(t, allow, agent.URL, Options{TrustedProxies: trusted})
		return cardAs(t, gw.URL+"/a2a/stub", map[string]string{"X-Forwarded-Proto": "https", "X-Forwarded-Host": "agents.example.com"})
	}
	if got := get(nil); strings.Contains(got, "agents.example.com") {
		t.Errorf("an untrusted client's X-Forwarded-Host went into the card: %s", got)
	}
	if got := get([]netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}); !strings.Contains(got, `"url":"https://agents.example.com/a2a/stub"`) {
		t.Errorf("a trusted proxy's forwarded host is not in the card: %s", got)
	}
}

// TestAttackForwardedHostNotAllowed: a trusted proxy that passes its
// client's X-Forwarded-Host on had the gateway sign a card naming any
// host; one the gateway does not serve (allowed_hosts) is ignored.
func TestAttackForwardedHostNotAllowed(t *testing.T) {
	agent, _ := stubAgent(t, goodCard)
	gw := serve(t, allow, agent.URL, Options{TrustedProxies: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")},
		HostAllowed: func(h string) bool { return h == "agents.example.com" }})
	card := func(host string) string {
		return cardAs(t, gw.URL+"/a2a/stub", map[string]string{"X-Forwarded-Host": host})
	}
	if got := card("evil.example"); strings.Contains(got, "evil.example") {
		t.Errorf("a forwarded host outside allowed_hosts went into the card: %s", got)
	}
	if got := card("agents.example.com"); !strings.Contains(got, "//agents.example.com/a2a/stub") {
		t.Errorf("an allowed forwarded host is not in the card: %s", got)
	}
}

// cardAs is the card the agent route at route serves a request with the
// headers hdr.
func cardAs(t *testing.T, route string, hdr map[string]string) string {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, route+"/.well-known/agent-card.json", nil)
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}
