package intercept

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"slices"
	"sync"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	lru "github.com/hashicorp/golang-lru/v2"

	"github.com/sluicehq/sluice/internal/jcs"
	"github.com/sluicehq/sluice/internal/ownership"
)

// CallContext is what the transport knows about where a message came from
// and where it goes.
type CallContext struct {
	Upstream  string // configured upstream name
	Target    string // upstream URL or stdio command line
	SessionID string // the gateway's session id, if any
	// Exchange tells apart requests that belong to no session (MCP
	// 2026-07-28 stateless ones): a value unique to the client's request,
	// so that the answers of two clients with one agent name sending the
	// same JSON-RPC id at once are never taken for each other's (the
	// requestState each is issued, the result each is scanned with).
	// "" in a session, where an id is the session's.
	Exchange        string
	Agent           string // agent identity as far as known
	ProtocolVersion string // negotiated or declared MCP version
	// Principal is the authenticated caller, nil when there is none; the
	// interceptor falls back to [PrincipalFrom] the call's context.
	Principal *Principal
	// ClientName is the name the client gives itself when something else
	// names the agent (the principal's ID or the agent header); "" when
	// unknown or the same.
	ClientName string
	// TaskScope is where the upstream's MCP task ids are unique: the
	// session's id when the session has an upstream connection (a
	// process) of its own, whose ids another session's may repeat; ""
	// for the upstream as a whole.
	TaskScope string
	// SharedTaskScope says TaskScope names no one process but a
	// principal's connections to the upstream, one on each replica: its
	// tasks and requestStates are kept in the shared store (Tasks), as
	// the upstream's as a whole are, rather than in this process only.
	SharedTaskScope bool
	// Lister, if not nil, lists the upstream's tools for the gateway
	// itself: a tools/call of a client that has not listed them waits for
	// it while the Observer keeps an inventory (unlisted.go). Nil decides
	// such a call with what was seen before.
	Lister ToolsLister
	// ClientCapabilities are the capabilities the client declared: at
	// initialize, for a session; in the request's _meta, for a 2026-07-28
	// request. Nil when it declared none or they are not known. A
	// tools/list answer is recorded with them (ObserveToolsPageWith).
	ClientCapabilities jsontext.Value
	// ClientCanApprove reports that a held call could be put to the
	// client's user: the operator lets clients answer (the gateway has an
	// Approver) and this client can be asked on this transport (see
	// [ActionDescriptor.ClientCanApprove]).
	ClientCanApprove bool
	// upstreamState is the requestState of the request, checked
	// (checkRequestState): ActionDescriptor.UpstreamState.
	upstreamState string
}

// ToolsObserver receives every tools/list result an upstream returns,
// before it is passed on to the client, so that a call the client makes on
// seeing the list is decided with it. Implementations must not block.
type ToolsObserver interface {
	ObserveTools(upstream string, result jsontext.Value)
}

// A ToolFilter is a Decider that can tell, from a tool's name and where it
// is called from alone, that the tool could never be allowed: whatever its
// arguments and whatever happened before, every call would be denied.
// Visible reports false only then; when in doubt it reports true. The
// descriptor carries no arguments, txn id or call id. Visible must be safe
// for concurrent use and must not block or record anything.
type ToolFilter interface {
	Visible(ctx context.Context, d *ActionDescriptor) bool
}

// An InventoryHasher is an Observer that keeps the authoritative inventory
// hash of each upstream; descriptors then carry its hash.
type InventoryHasher interface {
	Hash(upstream string) string
}

// Interceptor is the decision point shared by every transport. Its fields
// are set before first use and not changed afterwards; it is safe for
// concurrent use.
type Interceptor struct {
	// Decider decides every tools/call. Nil denies everything with
	// policy_not_configured.
	Decider Decider
	// Observer, if not nil, also gets every tools/list result.
	Observer ToolsObserver
	// Declared, if not nil, gives the capability class, action type and
	// boundary configured for a tool, for its descriptors.
	Declared func(upstream, tool string) (capabilityClass, actionType, boundary string)
	// OnResult, if not nil, gets the result of every allowed action
	// (tools/call, resources/read, prompts/get: what the model reads) once
	// the upstream answered it (after the client got it), with the
	// call's descriptor, but for a result WithholdResult was asked
	// about; and, without WithholdResult, what ScreenUpstreamMessage
	// reads. Set it before first use; it must not block.
	OnResult func(d *ActionDescriptor, result jsontext.Value)
	// WithholdResult, if not nil, is asked about every answer the client
	// would read of an allowed action (its result, or its error),
	// and of every tasks/result, before the client has it (ScreenResult,
	// ScreenError), with the call's descriptor (one naming only the
	// upstream, agent and session, and method for its tool, when the
	// call is not known: a task's result, a call forgotten). It returns
	// why the client must not have it, or "" to pass it on. A result
	// withheld is answered as a soft deny (a tool's) or an error (a
	// read's), an error with another error. A result it is asked about
	// is not given to OnResult too: it is expected to record what it
	// finds. It is asked too about the params of what an upstream sends
	// its client that the client shows its model or user (a sampling or
	// elicitation request, a progress, log or task status notification:
	// ScreenUpstreamMessage), with method and its tool naming the method.
	// It must not block.
	WithholdResult func(d *ActionDescriptor, method string, answer jsontext.Value) string
	// OnDecision, if not nil, is called after every decision.
	OnDecision func(*ActionDescriptor, Decision)
	// HideDeniedTools removes from tools/list results the tools the
	// Decider says this agent can never call (see [ToolFilter]). It has
	// no effect when the Decider is not a ToolFilter. False passes every
	// tools/list result on unchanged.
	HideDeniedTools bool
	// Tasks, if not nil, keeps the owners of MCP tasks where every replica
	// sees them, so a task created through one replica is its creator's
	// through any other (see [TaskStore]).
	Tasks TaskStore

	catalog sync.Map // upstream name -> *toolSet

	callsOnce sync.Once
	calls     *lru.Cache[string, *ActionDescriptor] // allowed calls awaiting a result, for OnResult

	tasksOnce sync.Once
	tasks     *ownership.Table     // upstream + task id -> who created it (tasks.go)
	unclaimed *ownership.Unclaimed // tasks the shared store did not take, to claim once it answers

	statesOnce sync.Once
	states     *ownership.Table // requestStates issued, with their binding (requeststate.go)
	stateCalls awaiting         // allowed 2026-07-28 requests awaiting an answer (requeststate.go)

	cursorsOnce sync.Once
	cursors     *ownership.Table // list cursors issued, with their binding (carry.go)

	listedOnce sync.Once
	listed     *ownership.Table // resources, prompts and tools listed, with their binding (listed.go)
}

type toolInfo struct {
	Description string         `json:"description"`
	Annotations jsontext.Value `json:"annotations"`
	InputSchema jsontext.Value `json:"inputSchema"`

	// OutputSchema is read only to set typed (and then dropped).
	OutputSchema jsontext.Value `json:"outputSchema"`

	// params are the arguments InputSchema marks with x-mcp-header, read
	// once per listing (ParamHeaders).
	params []paramBinding
	// typed: the listing declares an outputSchema (render).
	typed bool
}

type toolSet struct {
	hash  string
	tools map[string]toolInfo
	more  bool   // the list it was last given a page of goes on (nextCursor)
	next  string // that page's nextCursor
	// names are every tool the upstream has listed here, on any page of
	// any listing, for the route rules a carry is matched against
	// (carry.go): a listing that shows fewer (one page asked for anew,
	// a tool gone) must not open an upstream a rule closed through a tool
	// it listed before. Shared, never changed. seen holds the same names;
	// past maxCatalogTools of them, overflow is set and names and seen
	// are nil: every tool the policy names counts (fail closed).
	names    []string
	seen     map[string]struct{}
	overflow bool
}

// addListed sets the names of ts (see toolSet) to those of prev, the
// upstream's catalog before (nil for none), and the tools of a page,
// copying prev's only when the page lists one they do not hold.
func (ts *toolSet) addListed(prev *toolSet, page []string) {
	if prev != nil {
		ts.names, ts.seen, ts.overflow = prev.names, prev.seen, prev.overflow
	}
	copied := false
	for _, n := range page {
		if ts.overflow {
			return
		}
		if _, ok := ts.seen[n]; ok {
			continue
		}
		if !copied {
			ts.names, ts.seen = slices.Clone(ts.names), maps.Clone(ts.seen)
			if ts.seen == nil {
				ts.seen = make(map[string]struct{}, len(page))
			}
			copied = true
		}
		if len(ts.names) == maxCatalogTools {
			ts.names, ts.seen, ts.overflow = nil, nil, true
			return
		}
		ts.seen[n] = struct{}{}
		ts.names = append(ts.names, n)
	}
}

// maxCatalogTools bounds the tools an upstream's catalog holds.
const maxCatalogTools = 10_000

// Check decides about one client message. It returns forward=true when the
// message may go to the upstream unchanged; otherwise reply is the complete
// JSON-RPC response to send the client instead. tools/call requests and
// the reads resources/read and prompts/get are decided as actions; these
// methods sent as notifications, which have no id to answer and could only
// run unseen, are refused; every other message is forwarded when plain
// and otherwise decided as a carry of data to the upstream (carry.go).
func (i *Interceptor) Check(ctx context.Context, m *Message, cc CallContext) (reply []byte, forward bool) {
	_, reply, forward = i.CheckDecision(ctx, m, cc)
	return reply, forward
}

// CheckDecision is [Interceptor.Check] that also returns the decision, so
// a transport that can ask the client's user about a held call (MCP
// elicitation) knows its approval id. For a message that is not an
// action (see [Message.IsAction]) the decision is the zero value when it
// is plain, and a carry's otherwise (carry.go).
//
// An allowed call is committed before CheckDecision returns (see
// [ForwardObserver]): the caller must forward it.
func (i *Interceptor) CheckDecision(ctx context.Context, m *Message, cc CallContext) (dec Decision, reply []byte, forward bool) {
	if reply := refuseUngoverned(m); reply != nil {
		return Decision{}, reply, false
	}
	if reply := i.checkSubscription(ctx, m, cc); reply != nil {
		return Decision{}, reply, false
	}
	if m.Kind == KindRequest && TaskMethod(m.Method) {
		if reply := i.checkTask(ctx, m, cc); reply != nil {
			return Decision{}, reply, false
		}
	}
	if !m.IsAction() {
		dec, d, reply := i.checkCarry(ctx, m, cc)
		if reply != nil {
			return dec, reply, false
		}
		if d != nil {
			if dec = i.commit(ctx, m, cc, d, dec); dec.Verdict != Allow {
				return dec, carryReply(m, dec, d.TxnID, cc.ProtocolVersion), false
			}
		}
		return dec, nil, true
	}
	// Authenticated when the request came (or the connection opened);
	// a call may be decided again much later — held for approval, it waits
	// for a human — and must not go on once the credential is gone.
	if cc.Principal == nil {
		cc.Principal = PrincipalFrom(ctx)
	}
	if err := cc.Principal.Gone(); err != nil {
		return Decision{}, ErrorResponse(m.ID, err), false
	}
	state, reply := i.checkRequestState(ctx, m, cc)
	if reply != nil {
		return Decision{}, reply, false
	}
	cc.upstreamState = state
	d, dec := i.decide(ctx, m, cc)
	if dec.Verdict == Allow {
		if dec = i.commit(ctx, m, cc, d, dec); dec.Verdict == Allow {
			return dec, nil, true
		}
	}
	return dec, i.render(m, cc, dec, d.TxnID), false
}

// render answers m, which was not allowed. Only a tools/call result can
// carry a soft deny (isError): any other method is answered with the
// JSON-RPC error of throw mode, and so is a task-augmented call (params.task
// an object), whose client expects a task handle (CreateTaskResult) or an
// error: the official TypeScript SDK read a soft deny as a malformed handle
// and reported a schema error ("expected object" at task) in place of the
// reason. A soft deny of a tool whose listing declares an outputSchema has
// no structuredContent (renderDecision).
func (i *Interceptor) render(m *Message, cc CallContext, dec Decision, txnID string) []byte {
	if m.Method != "tools/call" || Member(m.Params, "task").Kind() == '{' {
		dec.Mode = ModeThrow
	}
	return renderDecision(m.ID, dec, txnID, cc.ProtocolVersion, !i.typedTool(cc.Upstream, m.Name))
}

// typedTool reports whether upstream's last listing of tool declared an
// outputSchema.
func (i *Interceptor) typedTool(upstream, tool string) bool {
	v, ok := i.catalog.Load(upstream)
	return ok && v.(*toolSet).tools[tool].typed
}

// refuseUngoverned answers a message that names a governed method but is
// not a request: policy can only decide about a call it can answer.
func refuseUngoverned(m *Message) []byte {
	if m.Kind != KindNotification || !(decidedMethod(m.Method) || TaskMethod(m.Method)) {
		return nil
	}
	return ErrorResponse(nil, &WireError{Code: CodeInvalidRequest,
		Message: "invalid request: " + m.Method + " must be a request with an id; it was sent as a notification and not forwarded"})
}

// decide builds m's descriptor and asks the Decider, telling OnDecision.
func (i *Interceptor) decide(ctx context.Context, m *Message, cc CallContext) (*ActionDescriptor, Decision) {
	if cc.Principal == nil {
		cc.Principal = PrincipalFrom(ctx)
	}
	var unlisted error
	if m.IsCall() {
		// Decided against what the upstream serves now, not a pin it
		// may have drifted from since (unlisted.go): before the
		// descriptor, which the listing describes.
		unlisted = i.ensureListed(ctx, cc)
	}
	d := i.Descriptor(m, cc)
	switch {
	case m.Method == "tools/call":
		if callCarries(d.CallExtra) {
			// Bytes of the client's beside the arguments (answers to
			// the upstream, members of its own): closed with its
			// upstream, as a carry is.
			d.CallCarries, d.UpstreamTools = true, i.catalogNames(cc.Upstream)
		}
	case i.readCarries(ctx, m, cc):
		// A read of the client's making: closed with its upstream, as
		// a carry is (listed.go).
		d.ReadCarries, d.UpstreamTools = true, i.catalogNames(cc.Upstream)
	}
	var dec Decision
	if unlisted != nil {
		dec = unlistedDecision(d, unlisted)
	} else {
		dec = Decide(ctx, i.Decider, d)
	}
	if i.OnDecision != nil && dec.Verdict != Allow {
		i.OnDecision(d, dec)
	}
	return d, dec
}

// commit tells a ForwardObserver Decider that the allowed call d will be
// forwarded. If that fails the call is denied instead, and the denial is
// what OnDecision hears of.
func (i *Interceptor) commit(ctx context.Context, m *Message, cc CallContext, d *ActionDescriptor, dec Decision) (out Decision) {
	defer func() {
		if i.OnDecision != nil {
			i.OnDecision(d, out)
		}
	}()
	if fo, ok := i.Decider.(ForwardObserver); ok {
		if err := forwarded(ctx, fo, d, dec); err != nil {
			return Decision{Verdict: Deny, Reason: ReasonPolicyError, Mode: dec.Mode, PolicyVersion: dec.PolicyVersion, RuleID: dec.RuleID,
				PublicReason: "the call was allowed but could not be recorded (" + err.Error() + "); it was not forwarded",
				Evidence:     Evidence{MatchedToolName: d.ToolName, ReasonCode: ReasonPolicyError}}
		}
	}
	// Both tables key the request alike: the key is made once.
	var key string
	if m != nil && m.IsAction() && (i.OnResult != nil || expectsState(cc)) {
		key = resultKey(cc, m.IDKey())
	}
	if i.OnResult != nil && key != "" {
		i.pendingCalls().Add(key, d)
	}
	i.expectState(ctx, m, cc, dec, key)
	return dec
}

// DecideAction decides about an action that did not arrive as an MCP
// message, such as an A2A message to an agent, whose descriptor the caller
// built (TxnID and Principal are filled in when empty): the same Decider,
// OnDecision and, for an allow, the ForwardObserver commit as a tools/call.
// An allow it returns means the action is recorded as forwarded.
func (i *Interceptor) DecideAction(ctx context.Context, d *ActionDescriptor) Decision {
	if d.TxnID == "" {
		d.TxnID = NewTxnID()
	}
	if d.Principal == nil {
		d.Principal = PrincipalFrom(ctx)
	}
	if p := d.Principal; p != nil && p.ID != d.Agent {
		if d.ClientName == "" {
			d.ClientName = d.Agent
		}
		d.Agent = p.ID
	}
	if d.Parameters == nil {
		d.Parameters = jsontext.Value("{}")
	}
	if i.Declared != nil && d.Method == "" && d.CapabilityClassDeclared == "" && d.ActionTypeDeclared == "" && d.BoundaryDeclared == "" {
		// What the operator declared about the action (an A2A agent's
		// skill: classifier.tools, the upstream's zone), as Descriptor
		// gives a tools/call: a manifest's boundary_ceiling compares it.
		d.CapabilityClassDeclared, d.ActionTypeDeclared, d.BoundaryDeclared = i.Declared(d.Upstream, d.ToolName)
	}
	dec := Decide(ctx, i.Decider, d)
	if dec.Verdict != Allow {
		if i.OnDecision != nil {
			i.OnDecision(d, dec)
		}
		return dec
	}
	return i.commit(ctx, nil, CallContext{}, d, dec)
}

// forwarded calls fo.Forwarded; a panic is an error.
func forwarded(ctx context.Context, fo ForwardObserver, d *ActionDescriptor, dec Decision) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("panic: %v", r)
		}
	}()
	return fo.Forwarded(ctx, d, dec)
}

// CheckBatch decides about every element of a JSON-RPC batch. It returns
// forward=true when the batch may be forwarded whole: every tools/call in
// it is allowed, so no element can pass the decision point by riding along
// with others. Nothing is committed (see [ForwardObserver]) unless all are
// allowed. Otherwise reply answers the batch: the denials, and an error for
// every other request, which was not forwarded.
func (i *Interceptor) CheckBatch(ctx context.Context, msgs []*Message, cc CallContext) (reply []byte, forward bool) {
	type decided struct {
		d   *ActionDescriptor
		dec Decision
	}
	replies := make([]jsontext.Value, len(msgs))
	calls := make([]decided, len(msgs))
	denied := false
	for n, m := range msgs {
		if r := refuseUngoverned(m); r != nil {
			replies[n], denied = r, true
			continue
		}
		if r := i.checkSubscription(ctx, m, cc); r != nil {
			replies[n], denied = r, true
			continue
		}
		if m.Kind == KindRequest && TaskMethod(m.Method) {
			if r := i.checkTask(ctx, m, cc); r != nil {
				replies[n], denied = r, true
				continue
			}
		}
		if !m.IsAction() {
			dec, d, r := i.checkCarry(ctx, m, cc)
			if d != nil {
				calls[n] = decided{d, dec}
			}
			if r != nil {
				replies[n], denied = r, true
			}
			continue
		}
		state, r := i.checkRequestState(ctx, m, cc)
		if r != nil {
			replies[n], denied = r, true
			continue
		}
		mc := cc
		mc.upstreamState = state
		d, dec := i.decide(ctx, m, mc)
		calls[n] = decided{d, dec}
		if dec.Verdict != Allow {
			replies[n], denied = i.render(m, cc, dec, d.TxnID), true
		}
	}
	if !denied {
		for n, m := range msgs {
			if c := calls[n]; c.d != nil {
				if dec := i.commit(ctx, m, cc, c.d, c.dec); dec.Verdict != Allow {
					if m.IsAction() {
						replies[n] = i.render(m, cc, dec, c.d.TxnID)
					} else {
						replies[n] = carryReply(m, dec, c.d.TxnID, cc.ProtocolVersion)
					}
					denied = true
				}
			}
		}
	} else if i.OnDecision != nil {
		// The allowed calls of a refused batch are not forwarded; what
		// they were decided is still on record.
		for _, c := range calls {
			if c.d != nil && c.dec.Verdict == Allow {
				i.OnDecision(c.d, c.dec)
			}
		}
	}
	if !denied {
		return nil, true
	}
	var out []jsontext.Value
	for n, m := range msgs {
		switch {
		case replies[n] != nil:
			out = append(out, replies[n])
		case m.Kind == KindRequest:
			out = append(out, ErrorResponse(m.ID, &WireError{Code: CodeInvalidRequest,
				Message: "invalid request: not forwarded because another call in the same batch was not allowed; send it again on its own"}))
		}
	}
	b, _ := json.Marshal(out)
	return b, false
}

// Descriptor builds the action descriptor of a tools/call, resources/read
// or prompts/get. Declared values and the tool catalog apply to tools only.
func (i *Interceptor) Descriptor(m *Message, cc CallContext) *ActionDescriptor {
	d := &ActionDescriptor{
		TxnID:           NewTxnID(),
		Method:          m.Method,
		ToolName:        m.ActionName(),
		Parameters:      m.Arguments,
		TargetEndpoint:  cc.Target,
		SessionID:       cc.SessionID,
		Upstream:        cc.Upstream,
		Agent:           cc.Agent,
		CallID:          m.ID,
		ProtocolVersion: cc.ProtocolVersion,
		Principal:       cc.Principal,
		ClientName:      cc.ClientName,
	}
	d.ClientCanApprove, d.UpstreamState = cc.ClientCanApprove, cc.upstreamState
	d.CallExtra, d.Meta = CallExtra(m), m.Meta
	if p := cc.Principal; p != nil && p.ID != d.Agent {
		// The principal is the agent, whichever transport built cc; a
		// different name the client gave is kept aside.
		if d.ClientName == "" {
			d.ClientName = d.Agent
		}
		d.Agent = p.ID
	}
	if d.Parameters == nil {
		d.Parameters = jsontext.Value("{}")
	}
	if m.Method != "tools/call" {
		return d
	}
	if i.Declared != nil {
		d.CapabilityClassDeclared, d.ActionTypeDeclared, d.BoundaryDeclared = i.Declared(cc.Upstream, m.Name)
	}
	if v, ok := i.catalog.Load(cc.Upstream); ok {
		ts := v.(*toolSet)
		d.ToolInventoryHash = ts.hash
		if h, ok := i.Observer.(InventoryHasher); ok {
			d.ToolInventoryHash = h.Hash(cc.Upstream)
		}
		if t, ok := ts.tools[m.Name]; ok {
			d.ToolDescription = t.Description
			d.Annotations = t.Annotations
			d.InputSchema = t.InputSchema
		}
	}
	return d
}

// ObserveTools records a tools/list result of upstream so later descriptors
// carry the tool's description and the inventory hash, then hands it on to
// the Observer. A result that cannot be read is ignored: the catalog is
// descriptive, never a reason to change what the client receives. Not told
// which page result is, it takes it for the next page of a list that goes
// on; the transports use ObserveToolsPage.
func (i *Interceptor) ObserveTools(upstream string, result jsontext.Value) {
	i.catalogPage(upstream, result, nil)
	if i.Observer != nil {
		i.Observer.ObserveTools(upstream, result)
	}
}

// ObserveToolsPage is ObserveTools told the cursor of the request result
// answers (ListCursor; "" for the first page): the page joins the
// catalog's list only if it is asked for with the cursor that list's
// last page gave, and an Observer that is a [ToolsPageObserver] is told
// the cursor too (see pages.go).
func (i *Interceptor) ObserveToolsPage(upstream string, result jsontext.Value, cursor string) {
	i.catalogPage(upstream, result, &cursor)
	switch o := i.Observer.(type) {
	case nil:
	case ToolsPageObserver:
		o.ObserveToolsPage(upstream, result, cursor)
	default:
		o.ObserveTools(upstream, result)
	}
}

// ObserveToolsPageWith is ObserveToolsPage told the capabilities the
// client that asked declared (CallContext.ClientCapabilities): servers
// list tools according to them, and an Observer that is a
// [ToolsCapsObserver] compares the list with what was listed to clients
// declaring the same.
func (i *Interceptor) ObserveToolsPageWith(upstream string, result jsontext.Value, cursor string, clientCaps jsontext.Value) {
	if o, ok := i.Observer.(ToolsCapsObserver); ok {
		i.catalogPage(upstream, result, &cursor)
		o.ObserveToolsPageWith(upstream, result, cursor, clientCaps)
		return
	}
	i.ObserveToolsPage(upstream, result, cursor)
}

// catalogPage records a page of upstream's tools in the catalog; cursor is
// that of the request it answers, nil when not known.
func (i *Interceptor) catalogPage(upstream string, result jsontext.Value, cursor *string) {
	var page struct {
		Tools []struct {
			Name string `json:"name"`
			toolInfo
		} `json:"tools"`
		NextCursor string `json:"nextCursor"`
	}
	if err := json.Unmarshal(result, &page); err != nil {
		return
	}
	var prev *toolSet
	if v, ok := i.catalog.Load(upstream); ok {
		prev = v.(*toolSet)
	}
	ts := &toolSet{tools: make(map[string]toolInfo, len(page.Tools)), more: page.NextCursor != "", next: page.NextCursor}
	// Later pages of a paginated list add to the earlier ones; the
	// page after a list's last starts the catalog over, and so does
	// one that would take it past maxCatalogTools (an upstream whose
	// pages never end). A page asked for with a cursor that continues
	// no list (one asked for alone) updates the tools on it and leaves
	// the list as it was.
	joins := prev != nil && prev.more && (cursor == nil || *cursor != "" && *cursor == prev.next)
	alone := prev != nil && cursor != nil && *cursor != "" && !joins
	if (joins || alone) && len(prev.tools)+len(page.Tools) <= maxCatalogTools {
		for k, t := range prev.tools {
			ts.tools[k] = t
		}
	}
	for _, t := range page.Tools {
		t.params = paramBindings(t.InputSchema)
		t.typed, t.OutputSchema = len(t.OutputSchema) > 0 && t.OutputSchema.Kind() != 'n', nil
		ts.tools[t.Name] = t.toolInfo
	}
	names := make([]string, len(page.Tools))
	for k, t := range page.Tools {
		names[k] = t.Name
	}
	ts.addListed(prev, names)
	if alone {
		ts.hash, ts.more, ts.next = prev.hash, prev.more, prev.next
	} else {
		canon := result.Clone()
		if jcs.Canonicalize(&canon) == nil {
			sum := sha256.Sum256(canon)
			ts.hash = hex.EncodeToString(sum[:])
		}
	}
	i.catalog.Store(upstream, ts)
}

// FilterToolsResult removes from result, a tools/list result sent towards
// the client of cc, the tools that client can never call, when
// HideDeniedTools is set and the Decider is a [ToolFilter]. Every other
// member of result and every kept tool stays byte for byte as it was. It
// returns changed=false, and result itself, when nothing was removed. A
// tool that cannot be read, or whose Visible panics, is kept: hiding is a
// courtesy to the model, never the thing that stops a call.
func (i *Interceptor) FilterToolsResult(ctx context.Context, cc CallContext, result jsontext.Value) (out jsontext.Value, changed bool) {
	if !i.HideDeniedTools {
		return result, false
	}
	tf, ok := i.Decider.(ToolFilter)
	if !ok {
		return result, false
	}
	tools := Member(result, "tools")
	if tools.Kind() != '[' {
		return result, false
	}
	dec := jsontext.NewDecoder(bytes.NewReader(tools))
	if _, err := dec.ReadToken(); err != nil {
		return result, false
	}
	var kept bytes.Buffer
	kept.Grow(len(tools))
	kept.WriteByte('[')
	n := 0
	for dec.PeekKind() != ']' {
		v, err := dec.ReadValue()
		if err != nil {
			return result, false
		}
		if !visible(ctx, tf, v, cc) {
			changed = true
			continue
		}
		if n > 0 {
			kept.WriteByte(',')
		}
		n++
		kept.Write(v)
	}
	if !changed {
		return result, false
	}
	kept.WriteByte(']')
	out, err := WithMember(result, "tools", kept.Bytes())
	if err != nil {
		return result, false
	}
	return out, true
}

// visible asks tf about one element of a tools/list "tools" array.
func visible(ctx context.Context, tf ToolFilter, tool jsontext.Value, cc CallContext) (ok bool) {
	var t struct {
		Name string `json:"name"`
		toolInfo
	}
	if err := json.Unmarshal(tool, &t); err != nil || t.Name == "" {
		return true
	}
	defer func() {
		if recover() != nil {
			ok = true
		}
	}()
	d := askedDescriptor(ctx, cc, "tools/call", t.Name)
	d.ToolDescription, d.Annotations, d.InputSchema = t.Description, t.Annotations, t.InputSchema
	return tf.Visible(ctx, d)
}

// askedDescriptor is the descriptor a ToolFilter is asked about for a call
// of method naming name by the client of cc, with no arguments.
func askedDescriptor(ctx context.Context, cc CallContext, method, name string) *ActionDescriptor {
	d := &ActionDescriptor{
		Method:          method,
		ToolName:        name,
		Parameters:      jsontext.Value("{}"),
		TargetEndpoint:  cc.Target,
		SessionID:       cc.SessionID,
		Upstream:        cc.Upstream,
		Agent:           cc.Agent,
		ProtocolVersion: cc.ProtocolVersion,
		Principal:       principalOf(ctx, cc),
		ClientName:      cc.ClientName,
	}
	if p := d.Principal; p != nil && p.ID != d.Agent {
		// As Descriptor does: the name the client gave is kept aside.
		if d.ClientName == "" {
			d.ClientName = d.Agent
		}
		d.Agent = p.ID
	}
	return d
}

// Readable reports whether a resources/read of uri by the client of cc
// could be allowed: false when there is no Decider, or the Decider (a
// ToolFilter) says every such read is denied, whatever else happens (a
// rule that denies it outright, a resource its upstream's listing was
// withheld for). Like Visible it decides and records nothing; a Decider
// that is no ToolFilter cannot say, and every read is reported possible.
// A subscription to the resource is screened with it, as its read would
// be decided, and its updates are decided by nothing else: a Visible that
// panics reports false, where a listing's filter keeps the tool.
func (i *Interceptor) Readable(ctx context.Context, cc CallContext, uri string) (ok bool) {
	if i.Decider == nil {
		return false
	}
	tf, isFilter := i.Decider.(ToolFilter)
	if !isFilter {
		return true
	}
	defer func() {
		if recover() != nil {
			ok = false
		}
	}()
	return tf.Visible(ctx, askedDescriptor(ctx, cc, "resources/read", ResourcePrefix+uri))
}

func principalOf(ctx context.Context, cc CallContext) *Principal {
	if cc.Principal != nil {
		return cc.Principal
	}
	return PrincipalFrom(ctx)
}

// ReasonResultWithheld is the reason code of a result ScreenResult
// withheld.
const ReasonResultWithheld = "result_withheld"

// WithholdsResults reports whether answers to method must be passed to
// ScreenResult before the client has them: an action's, tasks/result,
// which brings a tools/call made a task its result, and tasks/get and
// tasks/cancel, whose task's statusMessage (a failed task's error) the
// client shows as it shows the result.
func (i *Interceptor) WithholdsResults(method string) bool {
	return i.WithholdResult != nil && (ActionMethod(method) || ShowsTask(method))
}

// ShowsTask reports whether answers to method bring a task's result
// (tasks/result) or its status (tasks/get, tasks/cancel), which a client
// shows its model or user as it shows a result.
func ShowsTask(method string) bool {
	switch method {
	case "tasks/result", "tasks/get", "tasks/cancel":
		return true
	}
	return false
}

// ScreensErrors reports whether ScreenError may withhold an error.
func (i *Interceptor) ScreensErrors() bool { return i.WithholdResult != nil }

// ScreenResult returns raw, an upstream's answer to request id (idKey,
// of the client of cc) of action method whose result is result, as the
// client may have it: when WithholdResult gives a reason, a soft deny
// saying it for a tools/call or tasks/result (the model reads why) and
// an error for a read, and true. A result marked as not final (an
// input_required result, a task's handle) is screened too: a 2025 client
// reads a tool result's content whatever else it holds (mcp-go ignores
// resultType, and a task member it did not ask for), and what an
// input_required result asks (a sampling request's messages) is read by
// the client's model too.
func (i *Interceptor) ScreenResult(cc CallContext, method string, id jsontext.Value, idKey string, raw, result jsontext.Value) (jsontext.Value, bool) {
	if !i.WithholdsResults(method) {
		return raw, false
	}
	// Screened here, it is not OnResult's (ObserveResult finds no call):
	// WithholdResult has read it, and recorded what it found.
	d := i.answered(cc, method, idKey, true)
	why := i.WithholdResult(d, method, result)
	if why == "" {
		return raw, false
	}
	dc := Decision{Verdict: Deny, Reason: ReasonResultWithheld, PublicReason: why, Mode: ModeThrow}
	if method == "tools/call" || method == "tasks/result" {
		dc.Mode = ModeToolResult
	}
	return renderDecision(id, dc, d.TxnID, cc.ProtocolVersion, false), true
}

// ScreenTaskList is ScreenResult for the answer to a tasks/list of the
// client of cc whose result, already left with the client's own tasks
// alone (FilterTasksResult), is result: it lists the statusMessage a
// tasks/get answer gives (ShowsTask), which must not come this way
// instead. One withheld is an error saying why.
func (i *Interceptor) ScreenTaskList(cc CallContext, id jsontext.Value, idKey string, raw, result jsontext.Value) (jsontext.Value, bool) {
	if i.WithholdResult == nil {
		return raw, false
	}
	const method = "tasks/list"
	d := i.answered(cc, method, idKey, true)
	why := i.WithholdResult(d, method, result)
	if why == "" {
		return raw, false
	}
	dc := Decision{Verdict: Deny, Reason: ReasonResultWithheld, PublicReason: why, Mode: ModeThrow}
	return renderDecision(id, dc, d.TxnID, cc.ProtocolVersion, false), true
}

// ScreenError is ScreenResult for an error answer whose error object is
// errObj: a client shows a tool's error to its model as it shows a
// result, so an injection the gateway would withhold from a result must
// not come in the error's message or data. One withheld is answered with
// an error saying why. An error answering no request known (method "":
// its id not asked, or null) is screened too: mcp-go's client takes its
// POST's answer whatever its id says, and the TypeScript SDK takes one on
// the GET stream by its id, for its call's.
func (i *Interceptor) ScreenError(cc CallContext, method string, id jsontext.Value, idKey string, raw, errObj jsontext.Value) (jsontext.Value, bool) {
	if !i.ScreensErrors() || method != "" && !i.WithholdsResults(method) {
		return raw, false
	}
	why := i.WithholdResult(i.answered(cc, method, idKey, false), method, errObj)
	if why == "" {
		return raw, false
	}
	return ErrorResponse(id, &WireError{Code: CodeUpstreamError, Message: why}), true
}

// answered is the descriptor of the call of cc with idKey whose answer is
// screened, or one naming what is known of it; take removes it from the
// calls waiting for OnResult.
func (i *Interceptor) answered(cc CallContext, method, idKey string, take bool) *ActionDescriptor {
	key := resultKey(cc, idKey)
	if d, ok := i.pendingCalls().Peek(key); ok {
		if take {
			i.calls.Remove(key)
		}
		return d
	}
	return &ActionDescriptor{Upstream: cc.Upstream, Agent: cc.Agent, SessionID: cc.SessionID, ToolName: method}
}

// WantsResults reports whether tools/call results should be handed to
// ObserveResult.
func (i *Interceptor) WantsResults() bool { return i.OnResult != nil }

// ObserveResult hands the result of the action (tools/call,
// resources/read, prompts/get) with JSON id (as raw
// JSON text) in cc to OnResult. Results of calls it does not know (never
// allowed here, or forgotten: at most 10,000 are remembered) are ignored.
func (i *Interceptor) ObserveResult(cc CallContext, id string, result jsontext.Value) {
	if i.OnResult == nil {
		return
	}
	key := resultKey(cc, id)
	d, ok := i.pendingCalls().Get(key)
	if !ok {
		return
	}
	i.calls.Remove(key)
	i.OnResult(d, result)
}

// ObserveTaskResult hands the answer to a request of method (ShowsTask)
// of the client of cc (the result of a tools/call made a task, which the
// model reads, or the task's status) to OnResult, with a descriptor
// naming what is known of it: the upstream, agent and session, and method
// for its tool. Not when WithholdResult is set: it read the answer before
// the client had it.
func (i *Interceptor) ObserveTaskResult(cc CallContext, method string, result jsontext.Value) {
	if i.OnResult == nil || i.WithholdResult != nil || !ShowsTask(method) {
		return
	}
	i.OnResult(&ActionDescriptor{Method: method, ToolName: method, Upstream: cc.Upstream, Agent: cc.Agent, SessionID: cc.SessionID}, result)
}

// PendingResult returns the descriptor of the allowed call of cc with id
// whose result OnResult waits for, and leaves it waiting; nil when none
// does (or OnResult is nil). A replica hands it to another that may see
// the result first (ExpectResult).
func (i *Interceptor) PendingResult(cc CallContext, id string) *ActionDescriptor {
	if i.OnResult == nil {
		return nil
	}
	d, _ := i.pendingCalls().Peek(resultKey(cc, id))
	return d
}

// ExpectResult has OnResult wait for the result of d, the call of cc with
// id, which another replica allowed (PendingResult there), as if this one
// had: ObserveResult passes its result to OnResult.
func (i *Interceptor) ExpectResult(cc CallContext, id string, d *ActionDescriptor) {
	if i.OnResult == nil || d == nil {
		return
	}
	i.pendingCalls().Add(resultKey(cc, id), d)
}

func (i *Interceptor) pendingCalls() *lru.Cache[string, *ActionDescriptor] {
	i.callsOnce.Do(func() { i.calls, _ = lru.New[string, *ActionDescriptor](10000) })
	return i.calls
}

// resultKey names the answer to the request id of the client of cc: in
// its session, or in its exchange when it has none.
func resultKey(cc CallContext, id string) string {
	return cc.Upstream + "\x00" + cc.SessionID + "\x00" + cc.Exchange + "\x00" + cc.Agent + "\x00" + id
}

// ShownUpstreamMethod reports whether method, of a request or
// notification an upstream sends its client, carries text the client puts
// before its model or its user: a sampling request's messages and system
// prompt go into the client's model, an elicitation's message is shown to
// the user, and progress, log and task status messages are shown (or
// handed to the model) as they come, as are a cancellation's reason and
// the URI of a resource's update (the only member of one passed on).
func ShownUpstreamMethod(method string) bool {
	switch method {
	case "sampling/createMessage", "elicitation/create",
		"notifications/progress", "notifications/message", "notifications/tasks/status",
		"notifications/cancelled", "notifications/resources/updated":
		return true
	}
	return false
}

// ScreensUpstreamMessages reports whether ScreenUpstreamMessage reads
// anything: whether results are screened (WithholdResult) or recorded
// (OnResult).
func (i *Interceptor) ScreensUpstreamMessages() bool {
	return i.WithholdResult != nil || i.OnResult != nil
}

// ScreenUpstreamMessage returns why m, a request or notification the
// upstream of cc sends its client, must not reach it, or "" to pass it
// on. One of a method the client shows its model or user
// (ShownUpstreamMethod) is read whole, its params, as an action's result
// is: with WithholdResult, before the client has it (a reason withholds
// it); else, with OnResult, handed to it, to record what it finds, and
// passed on. The descriptor names the method for its tool.
func (i *Interceptor) ScreenUpstreamMessage(cc CallContext, m *Message) string {
	if m.Kind != KindRequest && m.Kind != KindNotification || !ShownUpstreamMethod(m.Method) {
		return ""
	}
	d := &ActionDescriptor{Method: m.Method, ToolName: m.Method, Upstream: cc.Upstream, Agent: cc.Agent, SessionID: cc.SessionID}
	switch {
	case i.WithholdResult != nil:
		return i.WithholdResult(d, m.Method, m.Params)
	case i.OnResult != nil:
		i.OnResult(d, m.Params)
	}
	return ""
}

// CodeUpstreamAskWithheld is the code of the error the gateway answers an
// upstream's request with when ScreenUpstreamMessage withheld it from the
// client: -1, the code MCP's sampling section has a client answer a
// request its user rejected with. The client's side declined it, which
// servers handle (a tool reports it); answering the upstream keeps it
// from waiting for an answer that cannot come.
const CodeUpstreamAskWithheld = -1

// WithheldAskMessage is the message of that error: fixed, whatever
// ScreenUpstreamMessage found. It names nothing of why (the finding kinds
// go to the audit event): an upstream told which rules its request set
// off could try variants until none did.
const WithheldAskMessage = "The client declined this request."

// WithheldAskResponse is the answer to an upstream's request id that
// ScreenUpstreamMessage withheld.
func WithheldAskResponse(id jsontext.Value) []byte {
	return ErrorResponse(id, &WireError{Code: CodeUpstreamAskWithheld, Message: WithheldAskMessage})
}
