package intercept

import (
	"bytes"
	"context"
	"fmt"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/sluicehq/sluice/internal/ownership"
)

// Carries: every client message that is not an action (tools/call,
// resources/read, prompts/get) still reaches the upstream, and most can
// hold bytes of the client's choosing: a completion's argument, a
// subscription's URI, a list cursor, a cancellation's reason, a
// progress message, _meta, an unknown method or member, the client's
// answer to the upstream's sampling, elicitation or roots request. A
// route rule that closed the upstream's sink tools after a sensitive read
// would mean nothing if these went on as before: the agent would hand the
// secret to the same server another way. So a client message is one of
// two things:
//
//   - plain: nothing in it is the client's to choose beyond its shape
//     (what every client sends to keep a session going): an initialize, a
//     ping or notifications/initialized without params, a list without a
//     cursor or with one this upstream gave this client for that list, a
//     task's get/result/cancel naming only the task (checkTask makes it
//     the caller's), logging/setLevel with one of the eight levels, a
//     cancellation naming only the request (the gateway drops its reason:
//     see [Restate]), an empty answer (a ping's) or an elicitation
//     declined or cancelled. _meta may hold only the 2026-07-28 members
//     the protocol puts there (version, client info, capabilities). It is
//     forwarded undecided: a client must be able to keep its session,
//     page a list and cancel its own calls whatever policy says of its
//     tools, and deciding these would put every ping through the
//     decider.
//   - anything else carries data, and is decided as an action of the
//     upstream, the "carry" [CarryPrefix]+method ("mcp:completion/complete",
//     "mcp:notifications/progress", [CarryResponse] for an answer), with
//     {"method", "params"} (an answer's {"result"} or {"error"}; top-level
//     members JSON-RPC does not define under "extra") as arguments. The
//     Decider tells a carry by its Method ([ActionDescriptor.IsCarry]) and
//     gets the names of the upstream's tools the gateway has seen listed
//     (UpstreamTools, nil when none were): the policy denies a carry when
//     a route rule closes the upstream itself or any of its tools (see
//     policy), so the rule that closed the sink closes these with no rule
//     written for them. A carry that is not allowed is answered with the
//     JSON-RPC error of a denial (a notification's or answer's with a null
//     id), never forwarded; one that cannot be described is refused.
//
// Why not a tool of its own per method classed by nothing: no route rule
// would see it as a sink until an operator thought to, and the hole would
// stay open by default. Why not decide plain messages too: they carry
// nothing the client chose but their timing, which is left open.

// CarryPrefix starts the action name of a carry (see above); a tools/call
// of a tool whose name starts with it is denied by policy as reserved.
const CarryPrefix = "mcp:"

// CarryResponse is the Method of the descriptor of a client's answer to an
// upstream's request (sampling, elicitation, roots), and CarryPrefix+it
// its action name.
const CarryResponse = "response"

// maxCursors is how many list cursors an Interceptor remembers as issued,
// and maxCursorsPerOwner how many of them one principal (else agent)
// holds, its own oldest forgotten past that: one client listing without
// end pushes out only its own. A list paged with a cursor forgotten is
// decided as a carry (allowed while the upstream is open to the client).
const (
	maxCursors         = 100_000
	maxCursorsPerOwner = maxCursors / 10
)

// loggingLevels are the values of logging/setLevel (RFC 5424 names).
var loggingLevels = map[string]bool{"debug": true, "info": true, "notice": true, "warning": true,
	"error": true, "critical": true, "alert": true, "emergency": true}

// cursorLists are the list methods whose answers' nextCursor a client
// sends back as params.cursor.
var cursorLists = map[string]bool{"tools/list": true, "prompts/list": true, "resources/list": true,
	"resources/templates/list": true, "tasks/list": true}

func (i *Interceptor) cursorTable() *ownership.Table {
	i.cursorsOnce.Do(func() { i.cursors = ownership.NewShared(maxCursors, maxCursorsPerOwner) })
	return i.cursors
}

// cursorIssued reports whether the cursor of key (cursorKey) was given.
func (i *Interceptor) cursorIssued(key string) bool {
	known, _ := i.cursorTable().Owns(key, "")
	return known
}

// cursorKey binds a cursor to the upstream, the list and whoever was
// given it (the principal, else the agent).
func cursorKey(ctx context.Context, cc CallContext, method, cursor string) string {
	return cc.Upstream + "\x00" + method + "\x00" + taskOwner(ctx, cc) + "\x00" + cursor
}

// ObserveCursor records the nextCursor of result, the upstream's answer
// to a method list request of the client of cc, as given to that client,
// so that the page after it is a plain request (see above). Other methods
// and results without a string nextCursor are ignored.
func (i *Interceptor) ObserveCursor(ctx context.Context, cc CallContext, method string, result jsontext.Value) {
	if !cursorLists[method] || result.Kind() != '{' {
		return
	}
	next := ValidMember(result, "nextCursor")
	if next.Kind() != '"' {
		return
	}
	if c := stringOf(next); c != "" {
		i.cursorTable().ContainsOrAdd(cursorKey(ctx, cc, method, c), shareOf(ctx, cc))
	}
}

// IsPlain reports whether m, a client message that is not an action,
// holds nothing of the client's choosing but its shape (see above).
func (i *Interceptor) IsPlain(ctx context.Context, m *Message, cc CallContext) bool {
	if !envelopeOnly(m) {
		return false
	}
	switch m.Kind {
	case KindResponse:
		switch {
		case EmptyValue(m.Result):
			return true // a ping's answer
		case m.Result.Kind() == '{':
			// An elicitation declined or cancelled: which of the two is
			// the client's only choice.
			n, plain := 0, true
			_ = eachValidMember(m.Result, func(k string, v jsontext.Value) error {
				n++
				plain = plain && k == "action" && (string(v) == `"decline"` || string(v) == `"cancel"`)
				return nil
			})
			return plain && n == 1
		}
		return false
	case KindError:
		return false // code, message and data are the client's
	}
	if m.Method == "initialize" {
		return plainInitialize(m.Params)
	}
	if !knownPlain(m.Method) {
		return false // a method the client made up, or one whose params are data
	}
	if m.Params == nil || string(m.Params) == "null" {
		return true
	}
	if m.Params.Kind() != '{' {
		return false
	}
	plain := true
	err := eachValidMember(m.Params, func(k string, v jsontext.Value) error {
		if !plain {
			return nil
		}
		switch {
		case k == "_meta":
			plain = plainMetaOnly(v)
		case EmptyValue(v):
			// An unset member, as SDKs send them: nothing chosen.
			plain = knownMember(m.Method, k)
		default:
			plain = i.plainMember(ctx, m.Method, k, v, cc)
		}
		return nil
	})
	return err == nil && plain
}

// plainInitialize reports whether the params of an initialize hold only
// what SDK clients send: the version, capabilities but experimental or
// extensions ones, and a clientInfo of name, version and title. Those
// strings are the client's self-description, sent once per session before
// anything else, and left open (README): a client must be able to start a
// session whatever it read before.
func plainInitialize(params jsontext.Value) bool {
	if params.Kind() != '{' {
		return params == nil || string(params) == "null"
	}
	plain := true
	_ = eachValidMember(params, func(k string, v jsontext.Value) error {
		switch k {
		case "protocolVersion":
			plain = plain && v.Kind() == '"'
		case "_meta":
			plain = plain && plainMetaOnly(v)
		case "clientInfo":
			plain = plain && plainClientInfo(v)
		case "capabilities":
			plain = plain && plainCapabilities(v, 0)
		default:
			plain = false
		}
		return nil
	})
	return plain
}

// capabilityWords are the member names of the client capabilities of MCP
// 2025-03-26 to 2025-11-25 at any depth.
var capabilityWords = map[string]bool{"roots": true, "sampling": true, "elicitation": true, "tasks": true,
	"listChanged": true, "context": true, "tools": true, "form": true, "url": true, "list": true, "cancel": true,
	"requests": true, "createMessage": true, "create": true}

// plainCapabilities reports whether v, client capabilities (or a part at
// depth), is made of capabilityWords, objects and booleans alone: no name
// or value of the client's choosing (experimental and extensions ones are
// the client's to fill).
func plainCapabilities(v jsontext.Value, depth int) bool {
	switch {
	case v.Kind() == 't' || v.Kind() == 'f':
		return depth > 0
	case v.Kind() != '{' || depth > 4:
		return false
	}
	return onlyMembers(v, func(k string, v jsontext.Value) bool {
		if depth == 0 && (k == "experimental" || k == "extensions") {
			return EmptyValue(v) // declared empty, as some SDKs do
		}
		return capabilityWords[k] && plainCapabilities(v, depth+1)
	})
}

// onlyMembers reports whether obj is an object each of whose members ok
// accepts.
func onlyMembers(obj jsontext.Value, ok func(k string, v jsontext.Value) bool) bool {
	if obj.Kind() != '{' {
		return false
	}
	all := true
	_ = eachValidMember(obj, func(k string, v jsontext.Value) error {
		all = all && ok(k, v)
		return nil
	})
	return all
}

// knownPlain reports whether requests or notifications of method may be
// plain at all.
func knownPlain(method string) bool {
	switch method {
	case "ping", "notifications/initialized", "notifications/roots/list_changed", "logging/setLevel",
		"notifications/cancelled", "tasks/get", "tasks/result", "tasks/cancel", "server/discover":
		return true
	}
	return cursorLists[method]
}

// knownMember reports whether k is a member method defines (an empty one
// of an unknown name would still be a name of the client's choosing).
func knownMember(method, k string) bool {
	switch {
	case cursorLists[method]:
		return k == "cursor"
	case method == "notifications/cancelled":
		return k == "requestId" || k == "reason"
	case method == "logging/setLevel":
		return k == "level"
	case TaskMethod(method):
		return k == "taskId"
	}
	return false
}

// plainMember reports whether member k (value v, not empty) of the params
// of a method message leaves the client nothing to choose.
func (i *Interceptor) plainMember(ctx context.Context, method, k string, v jsontext.Value, cc CallContext) bool {
	switch {
	case cursorLists[method] && k == "cursor":
		return v.Kind() == '"' && i.cursorIssued(cursorKey(ctx, cc, method, stringOf(v)))
	case method == "logging/setLevel" && k == "level":
		return v.Kind() == '"' && loggingLevels[stringOf(v)]
	case method == "notifications/cancelled" && k == "requestId":
		// The id of a request of the client's: as free as any id it
		// sends (README).
		return v.Kind() == '"' || v.Kind() == '0'
	case (method == "tasks/get" || method == "tasks/result" || method == "tasks/cancel") && k == "taskId":
		return v.Kind() == '"' // checkTask: the caller's own task
	}
	return false
}

// plainMetaOnly reports whether a _meta value holds only what the
// 2026-07-28 protocol puts in every request (version, client info and
// capabilities as plainInitialize takes them), or nothing.
func plainMetaOnly(meta jsontext.Value) bool {
	if meta.Kind() != '{' {
		return string(meta) == "null"
	}
	return onlyMembers(meta, func(k string, v jsontext.Value) bool {
		switch k {
		case "io.modelcontextprotocol/protocolVersion":
			return v.Kind() == '"'
		case "io.modelcontextprotocol/clientInfo":
			return plainClientInfo(v)
		case "io.modelcontextprotocol/clientCapabilities":
			return plainCapabilities(v, 0)
		}
		return false
	})
}

// plainClientInfo reports whether a clientInfo holds only the strings
// name, version and title.
func plainClientInfo(v jsontext.Value) bool {
	return onlyMembers(v, func(k string, v jsontext.Value) bool {
		return (k == "name" || k == "version" || k == "title") && v.Kind() == '"'
	})
}

// envelopeOnly reports whether m has no top-level member JSON-RPC does
// not define: an upstream may read them, and the client chose them.
func envelopeOnly(m *Message) bool {
	ok := true
	_ = eachValidMember(m.Raw, func(k string, _ jsontext.Value) error {
		switch k {
		case "jsonrpc", "id", "method", "params", "result", "error":
		default:
			ok = false
		}
		return nil
	})
	return ok
}

// EmptyValue reports whether v holds nothing: null, "", {} or [] (an
// unset member, as SDK clients send them).
func EmptyValue(v jsontext.Value) bool {
	switch v.Kind() {
	case 'n':
		return true
	case '"':
		return string(v) == `""`
	case '{', '[':
		return len(bytes.TrimSpace(v[1:len(v)-1])) == 0
	}
	return false
}

// Restate returns the message the gateway sends for m instead of m when it
// can say the same with less of the client's choosing: a
// notifications/cancelled whose reason, free text the upstream only logs,
// is dropped (a cancellation must reach the upstream whatever policy says
// of the client). It returns m itself otherwise, or on any doubt.
func Restate(m *Message) *Message {
	if m.Kind != KindNotification || m.Method != "notifications/cancelled" || m.Params.Kind() != '{' {
		return m
	}
	reason := ValidMember(m.Params, "reason")
	if reason == nil || EmptyValue(reason) {
		return m
	}
	params, err := WithoutMember(m.Params, "reason")
	if err != nil {
		return m
	}
	raw, err := WithMember(m.Raw, "params", params)
	if err != nil {
		return m
	}
	out, err := DecodeMessage(raw)
	if err != nil {
		return m
	}
	return out
}

// carryDescriptor builds the descriptor a carry m is decided with: an
// action's (Descriptor), named and argued as a carry.
func (i *Interceptor) carryDescriptor(m *Message, cc CallContext) (*ActionDescriptor, error) {
	args, err := carryArguments(m)
	d := i.Descriptor(m, cc)
	d.ToolName, d.Parameters, d.UpstreamTools = CarryPrefix+m.Method, args, i.catalogNames(cc.Upstream)
	if m.Kind == KindResponse || m.Kind == KindError {
		d.Method, d.ToolName, d.CallID = CarryResponse, CarryPrefix+CarryResponse, nil
	}
	if d.Parameters == nil {
		d.Parameters = jsontext.Value("{}")
	}
	return d, err
}

// catalogNames are the names of every tool upstream has listed here (see
// toolSet), nil when it has listed none, or more than maxCatalogTools;
// shared, never changed.
func (i *Interceptor) catalogNames(upstream string) []string {
	v, ok := i.catalog.Load(upstream)
	if !ok {
		return nil
	}
	switch ts := v.(*toolSet); {
	case ts.overflow:
		return nil
	case ts.names != nil:
		return ts.names
	}
	return []string{}
}

// carryArguments are a carry's arguments: {"method", "params"} of a
// request or notification, {"result"} or {"error"} of an answer, and
// "extra", the top-level members JSON-RPC does not define.
func carryArguments(m *Message) (jsontext.Value, error) {
	var args struct {
		Method string                    `json:"method,omitempty"`
		Params jsontext.Value            `json:"params,omitempty"`
		Result jsontext.Value            `json:"result,omitempty"`
		Error  jsontext.Value            `json:"error,omitempty"`
		Extra  map[string]jsontext.Value `json:"extra,omitempty"`
	}
	args.Method, args.Params, args.Result, args.Error = m.Method, m.Params, m.Result, m.Error
	_ = eachValidMember(m.Raw, func(k string, v jsontext.Value) error {
		switch k {
		case "jsonrpc", "id", "method", "params", "result", "error":
		default:
			if args.Extra == nil {
				args.Extra = map[string]jsontext.Value{}
			}
			args.Extra[k] = v
		}
		return nil
	})
	out, err := json.Marshal(args, json.Deterministic(true))
	if err != nil {
		return nil, fmt.Errorf("arguments: %w", err)
	}
	return out, nil
}

// checkCarry decides about m, a client message that is not an action, when
// it carries data (see above). It returns the decision and, when m may
// not be forwarded, the reply to send the client; a nil reply with a zero
// decision for a plain m. An allowed carry is committed as an action.
func (i *Interceptor) checkCarry(ctx context.Context, m *Message, cc CallContext) (Decision, *ActionDescriptor, []byte) {
	if i.IsPlain(ctx, m, cc) {
		return Decision{}, nil, nil
	}
	if cc.Principal == nil {
		cc.Principal = PrincipalFrom(ctx)
	}
	d, err := i.carryDescriptor(m, cc)
	var dec Decision
	if err != nil {
		dec = Decision{Verdict: Deny, Reason: ReasonPolicyError, Mode: ModeThrow,
			PublicReason: "the message could not be described to the policy (" + err.Error() + "); it was not forwarded",
			Evidence:     Evidence{MatchedToolName: d.ToolName, ReasonCode: ReasonPolicyError}}
	} else {
		dec = Decide(ctx, i.Decider, d)
	}
	if dec.Verdict == RequireApproval && m.Kind != KindRequest {
		// Nobody could be told when it is released: a notification or an
		// answer is never held.
		dec = Decision{Verdict: Deny, Reason: dec.Reason, Mode: ModeThrow, PolicyVersion: dec.PolicyVersion, RuleID: dec.RuleID,
			PublicReason: "this message would need an approval, which only a request can wait for; it was not forwarded", Evidence: dec.Evidence}
	}
	if dec.Verdict != Allow && i.OnDecision != nil {
		i.OnDecision(d, dec)
	}
	return dec, d, carryReply(m, dec, d.TxnID, cc.ProtocolVersion)
}

// carryReply answers the client for a carry m that was not allowed: a
// request by its id, a notification or an answer (to the upstream's
// request, whose id is not the client's) with a null id. Nil when allowed.
func carryReply(m *Message, dec Decision, txnID, version string) []byte {
	if dec.Verdict == Allow {
		return nil
	}
	dec.Mode = ModeThrow // a soft deny is a tool's result
	id := m.ID
	if m.Kind != KindRequest {
		id = nil
	}
	return RenderDecision(id, dec, txnID, version)
}

// WithheldAnswer returns what the gateway sends the upstream in place of
// m, the client's answer (a result or an error) to one of the upstream's
// requests, when dec did not allow it: a JSON-RPC error under the
// upstream's own id saying the answer was withheld, in words of the
// gateway's, so that the request the upstream waits on (a sampling call in
// the middle of a tool) ends now rather than at its timeout. Nil when m is
// no answer or dec allowed it.
func WithheldAnswer(m *Message, dec Decision) *Message {
	if (m.Kind != KindResponse && m.Kind != KindError) || dec.Verdict == Allow || dec.Verdict == "" || m.ID.Kind() == 'n' {
		return nil
	}
	why := "the client's answer was withheld by the gateway's policy"
	if dec.RuleID != "" {
		why += " (rule " + dec.RuleID + ")"
	}
	out, err := DecodeMessage(ErrorResponse(m.ID, &WireError{Code: CodePolicyDenied, Message: why}))
	if err != nil {
		return nil
	}
	return out
}
