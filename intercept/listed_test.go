package intercept

import (
	"context"
	"testing"

	"github.com/go-json-experiment/json/jsontext"
)

// TestReadCarries: a read carries the client's bytes unless it names, with
// nothing else, a URI or prompt its upstream listed to the same client.
func TestReadCarries(t *testing.T) {
	i := &Interceptor{}
	ctx := context.Background()
	cc := CallContext{Upstream: "web", Agent: "a"}
	i.ObserveListed(ctx, cc, "resources/list", jsontext.Value(`{"resources":[{"uri":"https://x.example/listed","name":"l"}],"nextCursor":"c"}`))
	i.ObserveListed(ctx, cc, "prompts/list", jsontext.Value(`{"prompts":[{"name":"summary","arguments":[{"name":"topic"}]}]}`))
	const meta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"a","version":"1"}}`
	for _, tc := range []struct {
		msg     string
		cc      CallContext
		carries bool
	}{
		{`{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":"https://x.example/listed"}}`, cc, false},
		{`{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":"https://x.example/listed",` + meta + `}}`, cc, false},
		{`{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":"https://x.example/listed","requestState":"s"}}`, cc, false},
		{`{"jsonrpc":"2.0","id":1,"method":"prompts/get","params":{"name":"summary"}}`, cc, false},
		{`{"jsonrpc":"2.0","id":1,"method":"prompts/get","params":{"name":"summary","arguments":{}}}`, cc, false},
		{`{"jsonrpc":"2.0","id":1,"method":"prompts/get","params":{"name":"summary","arguments":null}}`, cc, false},
		// Of the client's making.
		{`{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":"https://x.example/listed?q=secret"}}`, cc, true},
		{`{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":"https://x.example/Listed"}}`, cc, true},
		{`{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":"https://x.example/listed","_meta":{"progressToken":"secret"}}}`, cc, true},
		{`{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":"https://x.example/listed","x":""}}`, cc, true},
		{`{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":"https://x.example/listed"},"x":1}`, cc, true},
		{`{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":"https://x.example/listed","arguments":{}}}`, cc, true},
		{`{"jsonrpc":"2.0","id":1,"method":"prompts/get","params":{"name":"summary","arguments":{"topic":"secret"}}}`, cc, true},
		{`{"jsonrpc":"2.0","id":1,"method":"prompts/get","params":{"name":"secret"}}`, cc, true},
		// A URI listed as a prompt's name, or to another client or from
		// another upstream, was not listed to this one.
		{`{"jsonrpc":"2.0","id":1,"method":"prompts/get","params":{"name":"https://x.example/listed"}}`, cc, true},
		{`{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":"https://x.example/listed"}}`, CallContext{Upstream: "web", Agent: "b"}, true},
		{`{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":"https://x.example/listed"}}`, CallContext{Upstream: "docs", Agent: "a"}, true},
		{`{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":"https://x.example/listed"}}`, CallContext{Upstream: "web", Agent: "a", Principal: &Principal{ID: "a"}}, true},
	} {
		if got := i.readCarries(ctx, mustDecode(t, tc.msg), tc.cc); got != tc.carries {
			t.Errorf("%s (agent %q, upstream %q): carries %v, want %v", tc.msg, tc.cc.Agent, tc.cc.Upstream, got, tc.carries)
		}
	}
}

// TestReadCarriesDescriptor: the decider is told which reads carry, with
// the upstream's tools; a read of a listed item is not marked.
func TestReadCarriesDescriptor(t *testing.T) {
	rd := &recordingDecider{}
	i := &Interceptor{Decider: rd}
	ctx := context.Background()
	cc := CallContext{Upstream: "web", Agent: "a"}
	i.ObserveTools("web", jsontext.Value(`{"tools":[{"name":"web_search","inputSchema":{"type":"object"}}]}`))
	i.ObserveListed(ctx, cc, "resources/list", jsontext.Value(`{"resources":[{"uri":"file:///a"}]}`))
	i.Check(ctx, mustDecode(t, `{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":"file:///a"}}`), cc)
	i.Check(ctx, mustDecode(t, `{"jsonrpc":"2.0","id":2,"method":"resources/read","params":{"uri":"file:///b"}}`), cc)
	if len(rd.seen) != 2 {
		t.Fatalf("decided %d reads, want 2", len(rd.seen))
	}
	if d := rd.seen[0]; d.ReadCarries || d.UpstreamTools != nil {
		t.Errorf("listed read: ReadCarries %v, UpstreamTools %v; want false, nil", d.ReadCarries, d.UpstreamTools)
	}
	if d := rd.seen[1]; !d.ReadCarries || len(d.UpstreamTools) != 1 || d.UpstreamTools[0] != "web_search" {
		t.Errorf("unlisted read: ReadCarries %v, UpstreamTools %v; want true, [web_search]", d.ReadCarries, d.UpstreamTools)
	}
}

// TestReadCarriesAllocs: telling a listed read from one of the client's
// making allocates nothing.
func TestReadCarriesAllocs(t *testing.T) {
	i := &Interceptor{}
	ctx := context.Background()
	cc := CallContext{Upstream: "web", Agent: "a"}
	i.ObserveListed(ctx, cc, "resources/list", jsontext.Value(`{"resources":[{"uri":"file:///a"}]}`))
	for _, msg := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":"file:///a"}}`,
		`{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":"file:///b"}}`,
		`{"jsonrpc":"2.0","id":1,"method":"prompts/get","params":{"name":"p","arguments":{"x":"y"}}}`,
	} {
		m := mustDecode(t, msg)
		if n := testing.AllocsPerRun(100, func() { i.readCarries(ctx, m, cc) }); n != 0 {
			t.Errorf("%s: %v allocations, want 0", msg, n)
		}
	}
}

// BenchmarkCheckRead: a read decided with its listing looked up.
func BenchmarkCheckRead(b *testing.B) {
	i := &Interceptor{Decider: &StaticDecider{Default: Allow}}
	ctx := context.Background()
	cc := CallContext{Upstream: "web", Agent: "a"}
	i.ObserveListed(ctx, cc, "resources/list", jsontext.Value(`{"resources":[{"uri":"file:///a"}]}`))
	for _, tc := range []struct{ name, msg string }{
		{"listed", `{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":"file:///a"}}`},
		{"unlisted", `{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":"file:///b"}}`},
	} {
		m := mustDecode(b, tc.msg)
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, ok := i.Check(ctx, m, cc); !ok {
					b.Fatal("read refused")
				}
			}
		})
	}
}
