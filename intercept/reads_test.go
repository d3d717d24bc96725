package intercept

import (
	"context"
	"strings"
	"sync"
	"testing"
)

// recording is a Decider and ForwardObserver that denies what deny names
// (by descriptor ToolName) in tool_result mode and records what it saw.
type recording struct {
	deny      string
	mu        sync.Mutex
	decided   []ActionDescriptor
	forwarded []string
}

func (r *recording) Decide(_ context.Context, d *ActionDescriptor) (Decision, error) {
	r.mu.Lock()
	r.decided = append(r.decided, *d)
	r.mu.Unlock()
	if d.ToolName == r.deny {
		return Decision{Verdict: Deny, Reason: "rule_deny", PublicReason: "not this one", Mode: ModeToolResult}, nil
	}
	return Decision{Verdict: Allow, Reason: "rule_allow"}, nil
}

func (r *recording) Forwarded(_ context.Context, d *ActionDescriptor, _ Decision) error {
	r.mu.Lock()
	r.forwarded = append(r.forwarded, d.ToolName)
	r.mu.Unlock()
	return nil
}

// resources/read and prompts/get are decided like tools/call (issue 9,
// item 8): the Decider sees them as resource:URI and prompt:NAME with
// their method, an allowed read is committed (route memory), and a denied
// one is answered with a JSON-RPC error whatever the result mode, since
// only a tools/call result has isError.
func TestReadsAreDecided(t *testing.T) {
	tests := []struct {
		name, body, method, action string
	}{
		{"resource", `{"jsonrpc":"2.0","id":7,"method":"resources/read","params":{"uri":"file:///srv/secret/a.txt"}}`, "resources/read", "resource:file:///srv/secret/a.txt"},
		{"prompt", `{"jsonrpc":"2.0","id":7,"method":"prompts/get","params":{"name":"summarise","arguments":{"topic":"pay"}}}`, "prompts/get", "prompt:summarise"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := DecodeMessage([]byte(tt.body))
			if err != nil {
				t.Fatal(err)
			}
			cc := CallContext{Upstream: "up", Agent: "alice", SessionID: "s1"}

			rec := &recording{}
			i := &Interceptor{Decider: rec}
			if reply, ok := i.Check(context.Background(), m, cc); !ok {
				t.Fatalf("allowed: got reply %s, want forward", reply)
			}
			if len(rec.decided) != 1 || rec.decided[0].ToolName != tt.action || rec.decided[0].Method != tt.method {
				t.Fatalf("decided %+v, want one descriptor %s with method %s", rec.decided, tt.action, tt.method)
			}
			if len(rec.forwarded) != 1 || rec.forwarded[0] != tt.action {
				t.Errorf("forwarded %v, want [%s]", rec.forwarded, tt.action)
			}

			rec = &recording{deny: tt.action}
			i = &Interceptor{Decider: rec}
			reply, ok := i.Check(context.Background(), m, cc)
			if ok {
				t.Fatal("denied: got forward, want a reply")
			}
			if s := string(reply); !strings.Contains(s, `"error":{`) || !strings.Contains(s, `"id":7`) || strings.Contains(s, "isError") || !strings.Contains(s, "not this one") {
				t.Errorf("denied: got %s, want a JSON-RPC error for id 7 with the public reason", s)
			}
			if len(rec.forwarded) != 0 {
				t.Errorf("denied: forwarded %v, want nothing", rec.forwarded)
			}
		})
	}
}

// A read the gateway cannot decide about is refused: sent as a
// notification (no id to answer), or without a URI or name.
func TestUndecidableReadsAreRefused(t *testing.T) {
	for _, body := range []string{
		`{"jsonrpc":"2.0","method":"resources/read","params":{"uri":"file:///srv/secret/a.txt"}}`,
		`{"jsonrpc":"2.0","method":"prompts/get","params":{"name":"summarise"}}`,
	} {
		m, err := DecodeMessage([]byte(body))
		if err != nil {
			t.Fatal(err)
		}
		rec := &recording{}
		i := &Interceptor{Decider: rec}
		if reply, ok := i.Check(context.Background(), m, CallContext{}); ok || !strings.Contains(string(reply), "notification") {
			t.Errorf("%s: got %s, %v; want refused as a notification", body, reply, ok)
		}
	}
	for _, body := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{}}`,
		`{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":7}}`,
		`{"jsonrpc":"2.0","id":1,"method":"resources/read"}`,
		`{"jsonrpc":"2.0","id":1,"method":"prompts/get","params":{"name":""}}`,
		`{"jsonrpc":"2.0","id":1,"method":"prompts/get","params":{"Name":"x","name":"y"}}`,
	} {
		if _, err := DecodeMessage([]byte(body)); err == nil {
			t.Errorf("%s: decoded, want an invalid params error", body)
		}
	}
}
