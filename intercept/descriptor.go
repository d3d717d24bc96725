package intercept

import (
	"encoding/binary"
	"encoding/hex"
	"strings"
	"time"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/sluicehq/sluice/internal/idrand"
)

// ActionDescriptor is what the decision point knows about one tools/call:
// the fields of RFC-010 §7.4 plus the gateway's own context. It carries no
// conversation content. A descriptor is built once per call and not changed
// afterwards, so deciders may read it concurrently.
type ActionDescriptor struct {
	TxnID string `json:"txn_id"`

	// Method is the JSON-RPC method decided about: tools/call,
	// resources/read or prompts/get. Empty means tools/call.
	Method string `json:"method,omitempty"`
	// ToolName is the tool's name for tools/call, and for the reads the
	// resource's URI or the prompt's name with a prefix that keeps them
	// apart from tools: resource:URI, prompt:NAME (see [ActionName]).
	ToolName        string `json:"tool_name"`
	ToolDescription string `json:"tool_description,omitempty"`
	// Declared values come from configuration; empty when not configured.
	CapabilityClassDeclared string         `json:"capability_class_declared,omitempty"`
	ActionTypeDeclared      string         `json:"action_type_declared,omitempty"`
	BoundaryDeclared        string         `json:"boundary_declared,omitempty"`
	Parameters              jsontext.Value `json:"parameters"`
	TargetEndpoint          string         `json:"target_endpoint"`
	ToolInventoryHash       string         `json:"tool_inventory_hash,omitempty"`
	SessionID               string         `json:"session_id,omitempty"`

	// Upstream is the configured name of the upstream the call is bound for.
	Upstream string `json:"upstream"`
	// Agent is the calling agent's identity as far as it is known: the
	// authenticated principal's ID when there is one, else the client's
	// name from initialize, _meta or the agent header.
	Agent string `json:"agent,omitempty"`
	// Principal is the authenticated caller (auth: section), visible to
	// policy conditions as principal.*; nil without authentication.
	Principal *Principal `json:"principal,omitempty"`
	// ClientName is the name the client gave itself when Agent is named
	// otherwise (an authenticated principal's ID, the agent header); it
	// names nothing. Policy reads it as principal.client_name.
	ClientName string `json:"client_name,omitempty"`
	// CallID is the JSON-RPC id of the tools/call, as raw JSON.
	CallID jsontext.Value `json:"call_id,omitempty"`
	// ProtocolVersion is the MCP version the call was made under.
	ProtocolVersion string `json:"protocol_version,omitempty"`
	// Annotations are the tool's MCP annotations from the last tools/list.
	Annotations jsontext.Value `json:"annotations,omitempty"`
	// InputSchema is the tool's inputSchema from the last tools/list: what
	// its parameters mean (a url, a path, a query) as the server declares.
	InputSchema jsontext.Value `json:"input_schema,omitempty"`
	// ClientCanApprove reports that the gateway could ask the client's user
	// to approve this call if it were held: the operator lets clients
	// answer (approvals.client_may_answer) and the client declared form
	// elicitation, in its session (2025 era) or in this request's _meta
	// (2026-07-28, answered with input_required). False says nothing about
	// operators. It is not part of the call: never hashed or recorded.
	ClientCanApprove bool `json:"-"`
	// Classification is the classifier's advice, visible to policy
	// conditions as classification.*; nil when there is none. The
	// classifier itself never sees it.
	Classification map[string]any `json:"-"`
	// CallExtra is what the upstream gets of a tools/call, resources/read
	// or prompts/get besides its name and arguments that is the client's
	// to fill: params members beside name, uri, arguments, _meta and
	// requestState, _meta members beside the protocol's
	// (io.modelcontextprotocol/protocolVersion, clientInfo and
	// clientCapabilities), a short progressToken and a traceparent, and
	// envelope members JSON-RPC does not define (a name that could be taken
	// for a params or _meta member's is prefixed "envelope."); as one
	// JSON object, nil
	// when there are none. Not an argument (rules read args), but part of
	// the call: an approval binds it (approval.CallHash), so the approved
	// call is not sent again with data of the agent's choosing beside
	// its arguments.
	CallExtra jsontext.Value `json:"-"`
	// Meta is the request's _meta as the client sent it, nil for none;
	// shared with the message: a Decider must not change it. An approval
	// binds its io.modelcontextprotocol/clientInfo and clientCapabilities
	// (approval.CallHash), which CallExtra leaves out: they are the
	// client's to fill, but every 2026-07-28 request has them, and
	// building them into CallExtra would cost every call.
	Meta jsontext.Value `json:"-"`
	// UpstreamState is the requestState the request carries (2026-07-28)
	// once checked as issued by its upstream, through this gateway, to
	// this agent in answer to this very request (the same method, name
	// and arguments): the request goes on a round trip the upstream
	// started. Empty when it carries none. An approval the round trip's
	// first request was allowed by goes on with it (approval.Gate).
	UpstreamState string `json:"-"`
	// UpstreamTools, for a carry (see [ActionDescriptor.IsCarry]), a
	// read that carries (ReadCarries) or a call that does (CallCarries), are the names of the tools the
	// upstream listed through this gateway, nil when it has listed none
	// here: the tools whose closing closes the upstream to the carry. Nil
	// for every other action. Shared: a Decider must not change it.
	UpstreamTools []string `json:"-"`
	// ReadCarries reports that a read (resources/read, prompts/get) holds
	// bytes of the client's choosing for the upstream: a URI or prompt the
	// upstream did not list to this client through the gateway,
	// arguments, or a member or _meta the protocol does not put there.
	// Policy closes such a read with its upstream, as it closes a carry.
	// False for a read of a listed item alone, and for every tools/call.
	ReadCarries bool `json:"-"`
	// CallCarries reports that a tools/call holds, beside its name and
	// arguments, bytes of the client's choosing for the upstream: a
	// CallExtra member other than params.task, such as 2026-07-28's
	// inputResponses (the client's answers to the upstream's questions,
	// which a 2025-era client sends as a carry), a params member of its
	// own, _meta beyond the protocol's or an envelope member. Policy
	// closes such a call with its upstream, as it closes a carry.
	CallCarries bool `json:"-"`
}

// IsTool reports whether d is a tools/call (and not a read).
func (d *ActionDescriptor) IsTool() bool { return d.Method == "" || d.Method == "tools/call" }

// IsCarry reports whether d is not an action but a client message that
// carries data to the upstream (a completion, a subscription, a
// notification, an answer to the upstream: carry.go), named
// [CarryPrefix]+method.
func (d *ActionDescriptor) IsCarry() bool {
	return !d.IsTool() && !decidedMethod(d.Method) && strings.HasPrefix(d.ToolName, CarryPrefix)
}

// NewTxnID returns a 128-bit transaction id in hex; every event about one
// call carries the same one. The first 48 bits are the Unix time in
// milliseconds and the other 80 random, so ids sort by time: the audit
// store's index on them grows at one end instead of touching a random page
// per call.
func NewTxnID() string {
	var b [16]byte
	idrand.Read(b[6:])
	ms := uint64(time.Now().UnixMilli())
	binary.BigEndian.PutUint16(b[0:2], uint16(ms>>32))
	binary.BigEndian.PutUint32(b[2:6], uint32(ms))
	var x [32]byte // one allocation, the string, where EncodeToString makes two
	hex.Encode(x[:], b[:])
	return string(x[:])
}
