package intercept

import (
	"context"
	"slices"
	"strings"
	"testing"
)

// hidesSecrets allows every action and says every read of a secret://
// resource is denied.
type hidesSecrets struct{ *StaticDecider }

func (hidesSecrets) Visible(_ context.Context, d *ActionDescriptor) bool {
	return !strings.HasPrefix(d.ToolName, ResourcePrefix+"secret://")
}

// TestCheckSubscription: a subscription naming a resource no read of
// which can be allowed is refused, naming it, whichever era asks; one
// spelt so that a Go upstream (encoding/json matches names in any case)
// would read other resources than the gateway did is refused as invalid.
func TestCheckSubscription(t *testing.T) {
	var recorded []string
	i := &Interceptor{Decider: hidesSecrets{&StaticDecider{Default: Allow}}, OnDecision: func(d *ActionDescriptor, dec Decision) {
		if dec.Reason == ReasonNotReadable {
			recorded = append(recorded, d.Method+" "+d.ToolName+" "+string(dec.Verdict))
		}
	}}
	listen := func(params string) string {
		return `{"jsonrpc":"2.0","id":1,"method":"subscriptions/listen","params":` + params + `}`
	}
	for _, tc := range []struct {
		msg, want string // want: "" forwarded, else in the answer
	}{
		{`{"jsonrpc":"2.0","id":1,"method":"resources/subscribe","params":{"uri":"docs://a"}}`, ""},
		{`{"jsonrpc":"2.0","id":1,"method":"resources/subscribe","params":{"uri":"secret://a"}}`, `"code":-32001`},
		{`{"jsonrpc":"2.0","id":1,"method":"resources/subscribe","params":{"uri":7}}`, `"code":-32602`},
		// Names no resource: the upstream's to answer (a 2026-07-28 server
		// has no resources/subscribe: the conformance suite expects its
		// 404 and -32601, not the gateway's -32602).
		{`{"jsonrpc":"2.0","id":1,"method":"resources/subscribe","params":{"_meta":{}}}`, ""},
		{`{"jsonrpc":"2.0","id":1,"method":"resources/subscribe"}`, ""},
		{listen(`{"notifications":{"toolsListChanged":true}}`), ""},
		{listen(`{"notifications":{"resourceSubscriptions":["docs://a"]}}`), ""},
		{listen(`{"notifications":{"resourceSubscriptions":["docs://a","secret://a","secret://b"]}}`), `secret://a\", \"secret://b`},
		{listen(`{"notifications":{"ResourceSubscriptions":["secret://a"]}}`), `"code":-32602`},
		{listen(`{"Notifications":{"resourceSubscriptions":["secret://a"]}}`), `"code":-32602`},
		{listen(`{"notifications":{"resourceSubscriptions":"secret://a"}}`), `"code":-32602`},
	} {
		m, err := DecodeMessage([]byte(tc.msg))
		if err != nil {
			t.Fatal(err)
		}
		reply, ok := i.Check(context.Background(), m, CallContext{Upstream: "u"})
		if single, _ := i.CheckBatch(context.Background(), []*Message{m}, CallContext{Upstream: "u"}); (single == nil) != ok {
			t.Errorf("%s: Check forwards %v, CheckBatch answers %s", tc.msg, ok, single)
		}
		switch {
		case tc.want == "" && !ok:
			t.Errorf("%s: refused: %s", tc.msg, reply)
		case tc.want != "" && (ok || !strings.Contains(string(reply), tc.want)):
			t.Errorf("%s: forwarded %v, answer %s, want %s", tc.msg, ok, reply, tc.want)
		}
	}
	// Each refusal on record, once for Check and once for CheckBatch.
	want := []string{"resources/subscribe resource:secret://a deny", "subscriptions/listen resource:secret://a deny"}
	if got := slices.Compact(recorded); !slices.Equal(got, want) || len(recorded) != 4 {
		t.Errorf("recorded %q, want each of %q twice", recorded, want)
	}
}
