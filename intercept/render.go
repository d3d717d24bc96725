package intercept

import (
	"fmt"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/sluicehq/sluice/telemetry"
)

// Envelope is RFC-0002's tool result envelope.
type Envelope struct {
	Status       string `json:"status"` // "denied" or "approval_required"
	Code         string `json:"code"`
	PublicReason string `json:"publicReason"`
	Data         any    `json:"data"`
	// Evidence extends RFC-0002's envelope with ADR-027's evidence, so a
	// client (and its model) can see what the decision rested on.
	Evidence *Evidence `json:"evidence,omitempty"`
}

type textContent struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

type toolResult struct {
	// ResultType is required on results from MCP 2026-07-28 on.
	ResultType        string        `json:"resultType,omitempty"`
	Content           []textContent `json:"content"`
	IsError           bool          `json:"isError"`
	StructuredContent *Envelope     `json:"structuredContent,omitzero"`
}

type errorObject struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
	Data    any    `json:"data,omitempty"`
}

type throwData struct {
	Envelope
	TxnID string `json:"txn_id"`
}

// NewEnvelope is the envelope of decision d (one not allowed), as every
// transport renders it. The public reason and the evidence's tool name
// are bounded as events are (telemetry.Bound): they quote the tool name,
// which the agent chose and may make as long as a request body, and a
// deny quoting a 4 MiB name five times answered 20 MiB.
func NewEnvelope(d Decision) Envelope {
	env := Envelope{Status: "denied", Code: d.Reason, PublicReason: telemetry.Bound(d.PublicReason, telemetry.MaxRecordedText)}
	if d.Verdict == RequireApproval {
		env.Status = "approval_required"
	}
	switch {
	case d.ApprovalID != "":
		env.Data = map[string]string{"approval_id": d.ApprovalID}
	case d.RetryAfter > 0:
		env.Data = map[string]int64{"retry_after_ms": max(d.RetryAfter.Milliseconds(), 1)}
	}
	if ev := d.Evidence; ev.MatchedToolName != "" || len(ev.MatchedToolClasses) > 0 || ev.MatchedRouteRuleID != "" || ev.ReasonCode != "" {
		ev.MatchedToolName = telemetry.BoundName(ev.MatchedToolName)
		env.Evidence = &ev
	}
	if env.PublicReason == "" {
		env.PublicReason = d.Reason
	}
	return env
}

// RenderDecision answers a call that was not allowed, per RFC-0002: in
// tool_result mode a normal result with isError and the envelope in
// structuredContent; in throw mode a JSON-RPC error whose data carries the
// envelope and the txn_id. version is the MCP protocol version of the call;
// from 2026-07-28 on a result carries resultType.
func RenderDecision(id jsontext.Value, d Decision, txnID, version string) []byte {
	return renderDecision(id, d, txnID, version, true)
}

// renderDecision is RenderDecision; with structured false a soft deny
// leaves the envelope out of structuredContent, for a tool whose listing
// declares an outputSchema: the envelope cannot match the schema, and a
// client that validates structuredContent even on an error result (the
// official TypeScript SDK) refused the result, its model reading
// "Structured content does not match the tool's output schema" in place
// of the reason. An error result without structuredContent is valid
// under any schema, and the model still reads the reason.
func renderDecision(id jsontext.Value, d Decision, txnID, version string, structured bool) []byte {
	env := NewEnvelope(d)
	code := CodePolicyDenied
	if d.Verdict == RequireApproval {
		code = CodeApprovalRequired
	}
	if d.Mode == ModeToolResult {
		var rt string
		if version >= "2026-07-28" {
			rt = "complete"
		}
		res := toolResult{ResultType: rt, Content: []textContent{{Type: "text", Text: env.PublicReason}}, IsError: true}
		switch {
		case structured:
			res.StructuredContent = &env
		case d.ApprovalID != "":
			// What the envelope's data would have said, in the text.
			res.Content[0].Text += " (approval_id " + d.ApprovalID + ")"
		case d.RetryAfter > 0:
			res.Content[0].Text += fmt.Sprintf(" (retry after %d ms)", max(d.RetryAfter.Milliseconds(), 1))
		}
		return marshalResponse(id, "result", res)
	}
	return marshalResponse(id, "error", errorObject{Code: code, Message: env.PublicReason, Data: throwData{env, txnID}})
}

// ErrorResponse renders err as a JSON-RPC error response to id (nil id
// renders as null). A *WireError keeps its code; anything else is -32603.
func ErrorResponse(id jsontext.Value, err error) []byte {
	we, ok := err.(*WireError)
	if !ok {
		we = &WireError{Code: CodeInternalError, Message: err.Error()}
	}
	return marshalResponse(id, "error", errorObject{Code: we.Code, Message: we.Message, Data: we.Data})
}

func marshalResponse(id jsontext.Value, key string, v any) []byte {
	if len(id) == 0 {
		id = jsontext.Value("null")
	}
	// Messages may quote client input; invalid UTF-8 in it becomes U+FFFD
	// rather than an error.
	b, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, key: v}, json.Deterministic(true), jsontext.AllowInvalidUTF8(true))
	if err != nil {
		return []byte(`{"jsonrpc":"2.0","id":null,"error":{"code":-32603,"message":"internal error: cannot render response"}}`)
	}
	return b
}
