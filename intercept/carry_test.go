package intercept

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/go-json-experiment/json/jsontext"
)

// recordingDecider denies every carry and records what it was asked.
type recordingDecider struct {
	mu   sync.Mutex
	seen []*ActionDescriptor
}

func (r *recordingDecider) Decide(_ context.Context, d *ActionDescriptor) (Decision, error) {
	r.mu.Lock()
	r.seen = append(r.seen, d)
	r.mu.Unlock()
	return Decision{Verdict: Deny, Reason: "closed", RuleID: "r"}, nil
}

func mustDecode(t testing.TB, s string) *Message {
	t.Helper()
	m, err := DecodeMessage([]byte(s))
	if err != nil {
		t.Fatalf("%s: %v", s, err)
	}
	return m
}

// TestPlainMessages: what a client sends to keep a session going is
// plain; anything with bytes of its choosing is not.
func TestPlainMessages(t *testing.T) {
	i := &Interceptor{}
	cc := CallContext{Upstream: "web", Agent: "a"}
	ctx := context.Background()
	i.ObserveCursor(ctx, cc, "tools/list", jsontext.Value(`{"tools":[],"nextCursor":"given"}`))
	const meta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"a","version":"1"}}`
	for _, tc := range []struct {
		msg   string
		plain bool
	}{
		{`{"jsonrpc":"2.0","id":1,"method":"ping"}`, true},
		{`{"jsonrpc":"2.0","id":1,"method":"ping","params":{}}`, true},
		{`{"jsonrpc":"2.0","id":1,"method":"ping","params":{` + meta + `}}`, true},
		{`{"jsonrpc":"2.0","method":"notifications/initialized"}`, true},
		{`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"cursor":"given"}}`, true},
		{`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"cursor":null}}`, true},
		{`{"jsonrpc":"2.0","id":1,"method":"logging/setLevel","params":{"level":"debug"}}`, true},
		{`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":3}}`, true},
		{`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"x","reason":""}}`, true},
		{`{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{"taskId":"t"}}`, true},
		{`{"jsonrpc":"2.0","id":"s","result":{}}`, true},
		{`{"jsonrpc":"2.0","id":"s","result":{"action":"decline"}}`, true},
		{`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"roots":{"listChanged":true},"sampling":{},"elicitation":{"form":{}}},"clientInfo":{"name":"c","version":"1"}}}`, true},

		{`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"cursor":"made-up"}}`, false},
		{`{"jsonrpc":"2.0","id":1,"method":"prompts/list","params":{"cursor":"given"}}`, false},
		{`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"Cursor":"given"}}`, false},
		{`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"x":null}}`, false},
		{`{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":1}}`, false},
		{`{"jsonrpc":"2.0","id":1,"method":"ping","params":{"_meta":{"progressToken":"p"}}}`, false},
		{`{"jsonrpc":"2.0","id":1,"method":"ping","x":1}`, false},
		{`{"jsonrpc":"2.0","id":1,"method":"completion/complete","params":{}}`, false},
		{`{"jsonrpc":"2.0","id":1,"method":"resources/subscribe","params":{"uri":"a"}}`, false},
		{`{"jsonrpc":"2.0","id":1,"method":"logging/setLevel","params":{"level":"secret"}}`, false},
		{`{"jsonrpc":"2.0","id":1,"method":"x/y"}`, false},
		{`{"jsonrpc":"2.0","id":1,"method":"x/y","params":{` + meta + `}}`, false},
		{`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":3,"reason":"secret"}}`, false},
		{`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1,"progress":1}}`, false},
		{`{"jsonrpc":"2.0","method":"notifications/roots/list_changed","params":{"x":1}}`, false},
		{`{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{"taskId":"t","x":1}}`, false},
		{`{"jsonrpc":"2.0","id":"s","result":{"action":"accept","content":{}}}`, false},
		{`{"jsonrpc":"2.0","id":"s","result":{"roots":[]}}`, false},
		{`{"jsonrpc":"2.0","id":"s","error":{"code":1,"message":"m"}}`, false},
		{`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"experimental":{"x":{}}},"clientInfo":{"name":"c","version":"1"}}}`, false},
		{`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"sampling":{"secret":{}}},"clientInfo":{"name":"c"}}}`, false},
		{`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"c","icons":[]}}}`, false},
	} {
		if got := i.IsPlain(ctx, mustDecode(t, tc.msg), cc); got != tc.plain {
			t.Errorf("%s: plain %v, want %v", tc.msg, got, tc.plain)
		}
	}
	// A cursor is its receiver's.
	other := CallContext{Upstream: "web", Agent: "b"}
	if i.IsPlain(ctx, mustDecode(t, `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"cursor":"given"}}`), other) {
		t.Error("another agent's cursor: plain, want a carry")
	}
}

// TestCheckCarries: a plain message never reaches the Decider; a carry is
// decided as mcp:METHOD with its method and params as arguments, and its
// denial is a JSON-RPC error (a notification's and an answer's with a null
// id); a batch holding a denied carry is refused whole; without a Decider
// a carry is denied.
func TestCheckCarries(t *testing.T) {
	ctx := context.Background()
	rd := &recordingDecider{}
	i := &Interceptor{Decider: rd}
	i.ObserveTools("web", jsontext.Value(`{"tools":[{"name":"web_search"}]}`))
	cc := CallContext{Upstream: "web", Agent: "a", ProtocolVersion: "2025-03-26"}
	if reply, ok := i.Check(ctx, mustDecode(t, `{"jsonrpc":"2.0","id":1,"method":"ping"}`), cc); !ok || reply != nil || len(rd.seen) != 0 {
		t.Fatalf("ping: forwarded %v, reply %s, decided %d times; want forwarded undecided", ok, reply, len(rd.seen))
	}
	reply, ok := i.Check(ctx, mustDecode(t, `{"jsonrpc":"2.0","id":7,"method":"completion/complete","params":{"argument":{"name":"a","value":"v"}},"x":1}`), cc)
	if ok || !strings.Contains(string(reply), `"id":7`) || !strings.Contains(string(reply), `"code":-32001`) {
		t.Fatalf("completion: forwarded %v, reply %s; want a -32001 error to id 7", ok, reply)
	}
	d := rd.seen[0]
	if d.ToolName != "mcp:completion/complete" || !d.IsCarry() || d.IsTool() ||
		string(d.Parameters) != `{"method":"completion/complete","params":{"argument":{"name":"a","value":"v"}},"extra":{"x":1}}` ||
		len(d.UpstreamTools) != 1 || d.UpstreamTools[0] != "web_search" {
		t.Errorf("descriptor: %s %s tools %v", d.ToolName, d.Parameters, d.UpstreamTools)
	}
	for _, msg := range []string{
		`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1,"progress":1,"message":"m"}}`,
		`{"jsonrpc":"2.0","id":"srv","result":{"content":{"type":"text","text":"t"}}}`,
	} {
		reply, ok := i.Check(ctx, mustDecode(t, msg), cc)
		if ok || !strings.Contains(string(reply), `"id":null`) {
			t.Errorf("%s: forwarded %v, reply %s; want an error with a null id", msg, ok, reply)
		}
	}
	if rd.seen[len(rd.seen)-1].ToolName != "mcp:response" {
		t.Errorf("an answer is decided as %s, want mcp:response", rd.seen[len(rd.seen)-1].ToolName)
	}
	msgs, _, err := Decode([]byte(`[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","id":2,"method":"resources/subscribe","params":{"uri":"u"}}]`))
	if err != nil {
		t.Fatal(err)
	}
	if reply, ok := i.CheckBatch(ctx, msgs, cc); ok || !strings.Contains(string(reply), `"code":-32001`) {
		t.Errorf("batch with a denied carry: forwarded %v, reply %s", ok, reply)
	}
	none := &Interceptor{}
	if _, ok := none.Check(ctx, mustDecode(t, `{"jsonrpc":"2.0","id":1,"method":"resources/subscribe","params":{"uri":"u"}}`), cc); ok {
		t.Error("no Decider: a carry was forwarded")
	}
}

// TestRestateCancelled: a cancellation loses its reason and nothing else.
func TestRestateCancelled(t *testing.T) {
	m := mustDecode(t, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":3,"reason":"secret"}}`)
	got := Restate(m)
	if string(got.Raw) != `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":3}}` {
		t.Errorf("restated: %s", got.Raw)
	}
	if p := mustDecode(t, `{"jsonrpc":"2.0","id":1,"method":"ping"}`); Restate(p) != p {
		t.Error("a ping was restated")
	}
}

// TestWithheldAnswer: a withheld answer becomes the gateway's error under
// the upstream's id.
func TestWithheldAnswer(t *testing.T) {
	m := mustDecode(t, `{"jsonrpc":"2.0","id":"srv-1","result":{"content":"secret"}}`)
	got := WithheldAnswer(m, Decision{Verdict: Deny, Reason: "route_rule_deny", RuleID: "r"})
	if got == nil || got.Kind != KindError || string(got.ID) != `"srv-1"` || strings.Contains(string(got.Raw), "secret") ||
		!strings.Contains(string(got.Raw), "withheld by the gateway's policy (rule r)") {
		t.Fatalf("withheld: %v", got)
	}
	if WithheldAnswer(m, Decision{Verdict: Allow}) != nil {
		t.Error("an allowed answer was replaced")
	}
}

// BenchmarkCheckPing: a ping costs the check of its shape alone.
func BenchmarkCheckPing(b *testing.B) {
	i := &Interceptor{Decider: &recordingDecider{}}
	m := mustDecode(b, `{"jsonrpc":"2.0","id":1,"method":"ping","params":{}}`)
	cc := CallContext{Upstream: "web", Agent: "a"}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, ok := i.Check(ctx, m, cc); !ok {
			b.Fatal("ping refused")
		}
	}
}

// TestPlainMeta: 2026-07-28 _meta is plain only as SDKs fill it.
func TestPlainMeta(t *testing.T) {
	i := &Interceptor{}
	for _, tc := range []struct {
		meta  string
		plain bool
	}{
		{`{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"a","version":"1"},"io.modelcontextprotocol/clientCapabilities":{"sampling":{}}}`, true},
		{`{"io.modelcontextprotocol/clientInfo":{"name":"a","x":"secret"}}`, false},
		{`{"io.modelcontextprotocol/clientCapabilities":{"experimental":{"secret":{}}}}`, false},
		{`{"io.modelcontextprotocol/clientCapabilities":{"experimental":{},"extensions":{}}}`, true},
		{`{"io.modelcontextprotocol/protocolVersion":1}`, false},
		{`{"traceparent":"00-secret"}`, false},
	} {
		m := mustDecode(t, `{"jsonrpc":"2.0","id":1,"method":"ping","params":{"_meta":`+tc.meta+`}}`)
		if got := i.IsPlain(context.Background(), m, CallContext{}); got != tc.plain {
			t.Errorf("%s: plain %v, want %v", tc.meta, got, tc.plain)
		}
	}
}
