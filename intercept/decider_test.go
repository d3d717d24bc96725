package intercept

import (
	"context"
	"errors"
	"testing"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

func TestDecideFailsClosed(t *testing.T) {
	tests := []struct {
		name   string
		dec    Decider
		reason string
	}{
		{"nil decider", nil, ReasonPolicyNotConfigured},
		{"error", DeciderFunc(func(context.Context, *ActionDescriptor) (Decision, error) {
			return Decision{Verdict: Allow, Reason: "x"}, errors.New("boom")
		}), ReasonPolicyError},
		{"panic", DeciderFunc(func(context.Context, *ActionDescriptor) (Decision, error) { panic("boom") }), ReasonPolicyError},
		{"unknown verdict", DeciderFunc(func(context.Context, *ActionDescriptor) (Decision, error) {
			return Decision{Verdict: "maybe", Reason: "x"}, nil
		}), ReasonInvalidPolicyResult},
		{"missing reason", DeciderFunc(func(context.Context, *ActionDescriptor) (Decision, error) {
			return Decision{Verdict: Allow}, nil
		}), ReasonInvalidPolicyResult},
		{"unknown mode", DeciderFunc(func(context.Context, *ActionDescriptor) (Decision, error) {
			return Decision{Verdict: Allow, Reason: "ok", Mode: "silent"}, nil
		}), ReasonInvalidPolicyResult},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Decide(context.Background(), tt.dec, &ActionDescriptor{ToolName: "t"})
			if got.Verdict != Deny || got.Reason != tt.reason {
				t.Errorf("got %s/%s, want deny/%s", got.Verdict, got.Reason, tt.reason)
			}
		})
	}
}

func TestStaticDecider(t *testing.T) {
	s := &StaticDecider{Allow: []string{"echo", "files/read", "both"}, Deny: []string{"both"}, Approval: []string{"pay"}}
	tests := []struct {
		tool, upstream string
		want           Verdict
	}{
		{"echo", "any", Allow},
		{"read", "files", Allow},
		{"read", "other", Deny},
		{"both", "x", Deny},
		{"pay", "x", RequireApproval},
		{"unknown", "x", Deny},
	}
	for _, tt := range tests {
		got := Decide(context.Background(), s, &ActionDescriptor{ToolName: tt.tool, Upstream: tt.upstream})
		if got.Verdict != tt.want {
			t.Errorf("%s/%s: got %s, want %s", tt.upstream, tt.tool, got.Verdict, tt.want)
		}
	}
}

func TestRenderDecision(t *testing.T) {
	id := jsontext.Value(`7`)
	t.Run("tool_result", func(t *testing.T) {
		b := RenderDecision(id, Decision{Verdict: Deny, Reason: "tool_denied", PublicReason: "no", Mode: ModeToolResult}, "tx1", "2026-07-28")
		var got struct {
			ID     int `json:"id"`
			Result struct {
				ResultType string `json:"resultType"`
				Content    []struct {
					Type string `json:"type"`
					Text string `json:"text"`
				} `json:"content"`
				IsError bool `json:"isError"`
				SC      struct {
					Status       string `json:"status"`
					Code         string `json:"code"`
					PublicReason string `json:"publicReason"`
					Data         any    `json:"data"`
				} `json:"structuredContent"`
			} `json:"result"`
		}
		if err := json.Unmarshal(b, &got); err != nil {
			t.Fatal(err)
		}
		r := got.Result
		if got.ID != 7 || r.ResultType != "complete" || !r.IsError || len(r.Content) != 1 || r.Content[0].Text != "no" || r.SC.Status != "denied" || r.SC.Code != "tool_denied" || r.SC.PublicReason != "no" || r.SC.Data != nil {
			t.Errorf("got %s", b)
		}
	})
	t.Run("throw approval", func(t *testing.T) {
		b := RenderDecision(id, Decision{Verdict: RequireApproval, Reason: "approval_required", PublicReason: "wait"}, "tx2", "")
		var got struct {
			Error struct {
				Code int `json:"code"`
				Data struct {
					Status string `json:"status"`
					Code   string `json:"code"`
					TxnID  string `json:"txn_id"`
				} `json:"data"`
			} `json:"error"`
		}
		if err := json.Unmarshal(b, &got); err != nil {
			t.Fatal(err)
		}
		if got.Error.Code != CodeApprovalRequired || got.Error.Data.Status != "approval_required" || got.Error.Data.TxnID != "tx2" || got.Error.Data.Code != "approval_required" {
			t.Errorf("got %s", b)
		}
	})
}

func TestInterceptorDescriptor(t *testing.T) {
	ic := &Interceptor{}
	ic.ObserveTools("up", jsontext.Value(`{"tools":[{"name":"echo","description":"Echoes","annotations":{"readOnlyHint":true},"inputSchema":{"type":"object","properties":{"m":{"type":"number"}}}}]}`))
	m, err := DecodeMessage([]byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"m":1}}}`))
	if err != nil {
		t.Fatal(err)
	}
	d := ic.Descriptor(m, CallContext{Upstream: "up", Target: "http://x", SessionID: "s", Agent: "a"})
	if d.ToolDescription != "Echoes" || d.ToolInventoryHash == "" || string(d.Parameters) != `{"m":1}` || d.TxnID == "" || d.Agent != "a" {
		t.Errorf("got %+v", d)
	}
	if string(d.InputSchema) != `{"type":"object","properties":{"m":{"type":"number"}}}` {
		t.Errorf("input schema: got %s", d.InputSchema)
	}
	ic.Declared = func(upstream, tool string) (string, string, string) {
		if upstream == "up" && tool == "echo" {
			return "text.echo", "Read", "Local"
		}
		return "", "", ""
	}
	if d := ic.Descriptor(m, CallContext{Upstream: "up"}); d.CapabilityClassDeclared != "text.echo" || d.ActionTypeDeclared != "Read" || d.BoundaryDeclared != "Local" {
		t.Errorf("declared: got %q %q %q, want text.echo Read Local", d.CapabilityClassDeclared, d.ActionTypeDeclared, d.BoundaryDeclared)
	}
	other := ic.Descriptor(m, CallContext{Upstream: "other"})
	if other.ToolDescription != "" {
		t.Errorf("description leaked across upstreams: %q", other.ToolDescription)
	}
	reply, ok := ic.Check(context.Background(), m, CallContext{Upstream: "up"})
	if ok || reply == nil {
		t.Errorf("nil decider allowed the call")
	}
}
