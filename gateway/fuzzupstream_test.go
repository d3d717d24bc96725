package gateway

import (
	"context"
	"encoding/json"
	"log/slog"
	"testing"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/sluicehq/sluice/intercept"
)

// FuzzUpstreamMessage feeds whatever an upstream may write through the
// code that reads an upstream's messages before a client gets them: the
// bridge's routing (2025-era sessions on stdio upstreams), the screening
// every transport shares (hideTools) and the observer of Streamable HTTP
// answers. None may panic — a panic in the bridge's reader goroutine once
// took the whole gateway down on a line of log — and what reaches a
// client is nothing, the bytes as they came, or valid JSON.
func FuzzUpstreamMessage(f *testing.F) {
	for _, seed := range []string{
		`server: listing tools`,
		`{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"send_email","inputSchema":{"type":"object"}}]}}`,
		`{"jsonrpc":"2.0","id":2,"result":{"protocolVersion":"2025-11-25","capabilities":{}}}`,
		`{"jsonrpc":"2.0","id":3,"result":{"tasks":[{"taskId":"t1"},{"taskId":7}]}}`,
		`{"jsonrpc":"2.0","id":4,"result":{"task":{"taskId":"t2","status":"working"}}}`,
		`{"jsonrpc":"2.0","id":4.0,"result":{}}`,
		`{"jsonrpc":"2.0","id":"a\u0062","result":{}}`,
		`{"jsonrpc":"2.0","method":"notifications/tasks/status","params":{"taskId":"t9","status":"completed"}}`,
		`{"jsonrpc":"2.0","method":"notifications/message","params":{"_meta":{"io.modelcontextprotocol/related-task":{"taskId":1}}}}`,
		`[{"jsonrpc":"2.0","id":1,"result":{"tools":[]}},{"jsonrpc":"2.0","method":"notifications/tasks/status","params":{"taskId":"t2"}}]`,
		`{"jsonrpc":"2.0","id":1,"error":{"code":-1,"message":"x"}}`,
		`[]`, `{}`, `null`, "\xef\xbb\xbf{}",
	} {
		f.Add([]byte(seed))
	}
	methods := map[string]string{`1`: "tools/list", `2`: "initialize", `3`: "tasks/list", `4`: "tools/call", `"ab"`: "tools/call"}
	ic := &intercept.Interceptor{Decider: hidesEmail{}, HideDeniedTools: true}
	w := &withheldTasks{log: slog.New(slog.DiscardHandler)}
	cc := intercept.CallContext{Upstream: "u", Agent: "alice"}
	ic.ObserveTask(context.Background(), cc, jsontext.Value(`{"task":{"taskId":"t2"}}`))
	f.Fuzz(func(t *testing.T, msg []byte) {
		ctx := context.Background()
		s := newStream()
		close(s.gone) // delivery never waits on a reader
		b := &bridgeState{waiters: map[string]*stream{}, calls: map[string]bridgeCall{}, cc: cc, streams: []*stream{s}}
		for id, m := range methods {
			b.waiters[id] = s
			b.calls[id] = bridgeCall{method: m, cc: cc}
		}
		b.route(ctx, ic, w, &session{}, msg)

		var lists []string
		for id, m := range methods {
			if m == "tools/list" || m == "tasks/list" {
				lists = append(lists, id)
			}
		}
		out := hideTools(ctx, ic, w, cc, msg, func(id string) (string, string) { return methods[id], "" }, lists, nil, nil)
		if out != nil && string(out) != string(msg) && !json.Valid(out) {
			t.Errorf("hideTools(%q) = %q: neither the message nor valid JSON", msg, out)
		}

		ob := &observer{g: &Gateway{ic: ic, withheld: w, log: slog.New(slog.DiscardHandler)}, rt: &route{}, pending: methods, cc: cc, sess: &session{}}
		_ = unreadAnswer(200, ob, msg, nil, 32<<20)
		ob.lists(msg)
		_ = ob.filter(ctx, msg)
		ob.message(msg)
	})
}
