package intercept

import (
	"context"
	"testing"
)

// The principal in a call's context is the agent the Decider sees,
// whatever name the transport put in the CallContext; that name is kept
// as ClientName.
func TestPrincipalIsTheAgent(t *testing.T) {
	var got *ActionDescriptor
	ic := &Interceptor{Decider: DeciderFunc(func(_ context.Context, d *ActionDescriptor) (Decision, error) {
		got = d
		return Decision{Verdict: Deny, Reason: "seen"}, nil
	})}
	msgs, _, err := Decode([]byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"web_search","arguments":{}}}`))
	if err != nil {
		t.Fatal(err)
	}
	p := &Principal{ID: "alice", Method: "jwt"}
	ctx := WithPrincipal(context.Background(), p)
	for _, tt := range []struct {
		name           string
		ctx            context.Context
		cc             CallContext
		agent, claimed string
	}{
		{"principal in context", ctx, CallContext{Upstream: "u", Agent: "bob"}, "alice", "bob"},
		{"principal in call context", context.Background(), CallContext{Upstream: "u", Agent: "bob", Principal: p}, "alice", "bob"},
		{"same name", ctx, CallContext{Upstream: "u", Agent: "alice"}, "alice", ""},
		{"no principal", context.Background(), CallContext{Upstream: "u", Agent: "bob"}, "bob", ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got = nil
			ic.Check(tt.ctx, msgs[0], tt.cc)
			if got == nil {
				t.Fatal("the decider was not asked")
			}
			if got.Agent != tt.agent || got.ClientName != tt.claimed {
				t.Errorf("got agent %q client_name %q, want %q, %q", got.Agent, got.ClientName, tt.agent, tt.claimed)
			}
		})
	}
	if PrincipalFrom(context.Background()) != nil || PrincipalFrom(ctx) != p || WithPrincipal(ctx, nil) != ctx {
		t.Error("WithPrincipal/PrincipalFrom do not round-trip")
	}
}
