package intercept

import (
	"context"
	"strings"
	"testing"

	"github.com/go-json-experiment/json/jsontext"
)

// hideFilter is a Decider and ToolFilter that hides the tools in hide and
// records the descriptors it was asked about.
type hideFilter struct {
	DeciderFunc
	hide map[string]bool
	seen []*ActionDescriptor
}

func (h *hideFilter) Visible(_ context.Context, d *ActionDescriptor) bool {
	h.seen = append(h.seen, d)
	if d.ToolName == "boom" {
		panic("boom")
	}
	return !h.hide[d.ToolName]
}

const listResult = `{"tools":[{"name":"echo", "description":"Echo",` +
	` "inputSchema":{"type":"object"}},{"name":"send_email","inputSchema":{}},` +
	`{"inputSchema":{}},{"name":"boom"},{"name":"add","annotations":{"readOnlyHint":true}}],"nextCursor":"c2"}`

func TestFilterToolsResult(t *testing.T) {
	cc := CallContext{Upstream: "demo", Target: "http://up/mcp", SessionID: "s1", Agent: "agent-a", ProtocolVersion: "2025-11-25"}
	tests := []struct {
		name    string
		ic      *Interceptor
		result  string
		want    string
		changed bool
	}{
		{"option off", &Interceptor{Decider: &hideFilter{hide: map[string]bool{"send_email": true}}}, listResult, listResult, false},
		{"decider is no ToolFilter", &Interceptor{Decider: &StaticDecider{Deny: []string{"send_email"}}, HideDeniedTools: true}, listResult, listResult, false},
		{"nil decider", &Interceptor{HideDeniedTools: true}, listResult, listResult, false},
		{"nothing hidden", &Interceptor{Decider: &hideFilter{}, HideDeniedTools: true}, listResult, listResult, false},
		{
			"one hidden", &Interceptor{Decider: &hideFilter{hide: map[string]bool{"send_email": true}}, HideDeniedTools: true}, listResult,
			`{"tools":[{"name":"echo", "description":"Echo", "inputSchema":{"type":"object"}},{"inputSchema":{}},{"name":"boom"},` +
				`{"name":"add","annotations":{"readOnlyHint":true}}],"nextCursor":"c2"}`,
			true,
		},
		{
			"first and last hidden", &Interceptor{Decider: &hideFilter{hide: map[string]bool{"echo": true, "add": true}}, HideDeniedTools: true}, listResult,
			`{"tools":[{"name":"send_email","inputSchema":{}},{"inputSchema":{}},{"name":"boom"}],"nextCursor":"c2"}`,
			true,
		},
		{
			"all hidden", &Interceptor{Decider: &hideFilter{hide: map[string]bool{"a": true, "b": true}}, HideDeniedTools: true},
			`{"_meta":{"k":1},"tools":[{"name":"a"},{"name":"b"}]}`, `{"_meta":{"k":1},"tools":[]}`, true,
		},
		{"no tools member", &Interceptor{Decider: &hideFilter{hide: map[string]bool{"a": true}}, HideDeniedTools: true}, `{"other":[{"name":"a"}]}`, `{"other":[{"name":"a"}]}`, false},
		{"tools not an array", &Interceptor{Decider: &hideFilter{hide: map[string]bool{"a": true}}, HideDeniedTools: true}, `{"tools":{"name":"a"}}`, `{"tools":{"name":"a"}}`, false},
		{"result not an object", &Interceptor{Decider: &hideFilter{hide: map[string]bool{"a": true}}, HideDeniedTools: true}, `[{"name":"a"}]`, `[{"name":"a"}]`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, changed := tt.ic.FilterToolsResult(context.Background(), cc, jsontext.Value(tt.result))
			if string(got) != tt.want || changed != tt.changed {
				t.Errorf("got %s (changed %v), want %s (changed %v)", got, changed, tt.want, tt.changed)
			}
			if changed && !jsontext.Value(got).IsValid() {
				t.Errorf("got invalid JSON %s", got)
			}
		})
	}
}

func TestFilterToolsResultDescriptor(t *testing.T) {
	h := &hideFilter{}
	ic := &Interceptor{Decider: h, HideDeniedTools: true}
	cc := CallContext{Upstream: "demo", Target: "http://up/mcp", SessionID: "s1", Agent: "agent-a", ProtocolVersion: "2025-11-25"}
	ic.FilterToolsResult(context.Background(), cc, jsontext.Value(listResult))
	var names []string
	for _, d := range h.seen {
		names = append(names, d.ToolName)
		if d.Upstream != cc.Upstream || d.Agent != cc.Agent || d.SessionID != cc.SessionID || d.TargetEndpoint != cc.Target || d.ProtocolVersion != cc.ProtocolVersion {
			t.Errorf("descriptor of %s: got %+v, want the call context %+v", d.ToolName, d, cc)
		}
		if string(d.Parameters) != "{}" {
			t.Errorf("descriptor of %s: parameters %s, want {}", d.ToolName, d.Parameters)
		}
	}
	// The tool without a name is kept without asking.
	if got, want := strings.Join(names, ","), "echo,send_email,boom,add"; got != want {
		t.Errorf("asked about %s, want %s", got, want)
	}
	if d := h.seen[0]; d.ToolDescription != "Echo" {
		t.Errorf("description: got %q, want Echo", d.ToolDescription)
	}
	if d := h.seen[3]; string(d.Annotations) != `{"readOnlyHint":true}` {
		t.Errorf("annotations: got %s, want the tool's", d.Annotations)
	}
}
