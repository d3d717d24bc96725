package gateway

// Approval through the client. When policy holds a tools/call
// (require_approval) and the client can elicit form input from its user,
// the gateway asks that user to approve the exact call instead of only
// answering approval_required:
//
//   - In a session before 2026-07-28 whose client declared elicitation at
//     initialize, the POST is answered with an SSE stream that carries an
//     elicitation/create request. The client answers it on a separate POST,
//     which the gateway takes (202) and never forwards. An approval lets
//     the call through to the upstream, whose answer follows on the same
//     stream; a decline ends it with the denial. A client that goes away
//     leaves the request pending for an operator.
//   - From 2026-07-28 on (stateless), the call is answered with an
//     input_required result whose requestState is sealed by the Approver
//     (see approval.Store.SealState): bound to the agent, the call's hash,
//     the policy version, the approval id and an expiry. The client
//     retries the same call with its answer in params.inputResponses; the
//     gateway removes that answer and the state before policy sees the
//     call again, so what is decided is exactly what is forwarded.
//
// This happens only where the operator lets clients answer (an Approver
// is configured): where the client is the agent itself, its answer is the
// agent approving its own call. Without one, and for any answer to a
// question the gateway did not ask — inputResponses for the gateway's key
// in a 2025-era session, or with a requestState that is forged, altered,
// expired, or issued about another call or agent — the call is refused
// with an invalid-params error and nothing changes.
//
// Either way the answer only ever decides the approval request the Gate
// holds for this very call of this very agent: the approval stays bound to
// the call hash, and the call is decided again afterwards.

import (
	"bytes"
	"cmp"
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/sluicehq/sluice/approval"
	"github.com/sluicehq/sluice/intercept"
	"github.com/sluicehq/sluice/telemetry"
)

// Approver decides held calls for the gateway when the client's user
// answers them. It must be safe for concurrent use.
type Approver interface {
	// Decide approves or declines the pending request id on behalf of by.
	Decide(id string, approve bool, by string) (approval.Request, error)
	// Wait blocks until request id is no longer pending or ctx ends.
	Wait(ctx context.Context, id string) (approval.Request, error)
}

var _ Approver = (*approval.Store)(nil)

// stateSealer is an Approver that can seal the requestState of 2026-07-28
// approval questions. Without it no 2026-07-28 client is asked.
type stateSealer interface {
	SealState(id string, carry jsontext.Value) (string, error)
	OpenState(state string) (approval.State, error)
}

var _ stateSealer = (*approval.Store)(nil)

var approvalInputKeyBytes = []byte(approvalInputKey)

const (
	// approvalInputKey names the gateway's entry in a 2026-07-28
	// input_required result's inputRequests and in the retry's
	// inputResponses.
	approvalInputKey = "sluice-approval"
	// approvalIDPrefix starts the JSON ids of the gateway's own
	// elicitation/create requests. A client response to such an id is the
	// gateway's, never the upstream's, and is never forwarded.
	approvalIDPrefix = `"sluice-approval-`
	// metaClientCaps is where a 2026-07-28 request declares its client's
	// capabilities.
	metaClientCaps = "io.modelcontextprotocol/clientCapabilities"
	// maxShownArgs bounds the arguments quoted to the user.
	maxShownArgs = 1024
)

// approvalSchema is the form the user fills in: one required boolean.
var approvalSchema = jsontext.Value(`{"type":"object","properties":{"approve":{"type":"boolean","title":"Approve this call?",` +
	`"description":"Yes runs this exact call once; no declines it."}},"required":["approve"]}`)

// elicitParams are the params of the gateway's elicitation/create request,
// form mode (the mode member is left out: form is the default, and clients
// of 2025-06-18 know no other).
type elicitParams struct {
	Message         string         `json:"message"`
	RequestedSchema jsontext.Value `json:"requestedSchema"`
}

// approvalForm is the question put to the user about the held call m.
func approvalForm(m *intercept.Message, upstream string, dec intercept.Decision) elicitParams {
	args := string(m.Arguments)
	if args == "" || args == "null" {
		args = "{}"
	}
	reason := dec.PublicReason
	if reason == "" {
		reason = dec.Reason
	}
	var answers string
	if v := intercept.ValidMember(m.Params, "inputResponses"); v != nil {
		answers = "\nAnswers to the upstream's questions: " + shorten(string(v))
	}
	return elicitParams{
		Message: fmt.Sprintf("Sluice is holding a call to tool %q on upstream %q until it is approved.\nReason: %s\nArguments: %s%s\nApproval: %s",
			m.Name, upstream, reason, shorten(args), answers, dec.ApprovalID),
		RequestedSchema: approvalSchema,
	}
}

// shorten cuts s, shown in an approval question, at maxShownArgs bytes.
func shorten(s string) string {
	if len(s) <= maxShownArgs {
		return s
	}
	n := maxShownArgs
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "… (truncated)"
}

// formElicitation reports whether a client capabilities object declares
// form-mode elicitation: an elicitation member that names form, or that
// does not name url (an empty one means form, as in 2025-06-18).
func formElicitation(caps jsontext.Value) bool {
	el := intercept.Member(caps, "elicitation")
	if el.Kind() != '{' {
		return false
	}
	return intercept.Member(el, "form") != nil || intercept.Member(el, "url") == nil
}

// initFormElicitation reports whether x is an initialize request whose
// client declares form elicitation.
func (x *exchange) initFormElicitation() bool {
	if x.batch || x.msgs[0].Method != "initialize" {
		return false
	}
	return formElicitation(intercept.Member(x.msgs[0].Params, "capabilities"))
}

// readApproval reads an elicitation result for the approval form: accept
// with approve true approves; accept with approve false, decline and cancel
// decline. answered is false when the result is none of these.
func readApproval(result jsontext.Value) (approve, answered bool) {
	var res struct {
		Action  string `json:"action"`
		Content struct {
			Approve *bool `json:"approve"`
		} `json:"content"`
	}
	if json.Unmarshal(result, &res) != nil {
		return false, false
	}
	switch res.Action {
	case "accept":
		if res.Content.Approve == nil {
			return false, false
		}
		return *res.Content.Approve, true
	case "decline", "cancel":
		return false, true
	}
	return false, false
}

func approvedBy(agent string) string {
	if agent == "" {
		agent = "client"
	}
	return "mcp-elicitation:" + agent
}

// isApprovalAnswer reports whether m is a client's response to one of the
// gateway's own elicitation requests.
// approvalID is the JSON id of the gateway's n-th question: its prefix,
// n, and 96 random bits. Upstream requests are relayed to the client with
// their own ids, so a server could send one of its own under a question's
// id, and the user's answer to it would be taken for the answer to the
// question; it cannot guess the random part.
func approvalID(prefix string, n uint64) string {
	var r [12]byte
	_, _ = rand.Read(r[:])
	return prefix + strconv.FormatUint(n, 10) + "-" + base64.RawURLEncoding.EncodeToString(r[:]) + `"`
}

func isApprovalAnswer(m *intercept.Message) bool {
	return (m.Kind == intercept.KindResponse || m.Kind == intercept.KindError) && strings.HasPrefix(m.IDKey(), approvalIDPrefix)
}

// approvalAnswer is the user's answer carried by a 2026-07-28 retry.
type approvalAnswer struct {
	state    string // requestState as the client sent it back
	approve  bool
	answered bool           // false: the answer could not be read; the call stays held
	sealed   approval.State // what state says, once admitAnswer opened it
}

// admitAnswer decides whether the answer a, taken from call m (stripped
// of it) with context cc, may decide an approval request: only where
// clients may answer (ap is set), only in 2026-07-28, and only with a
// sealed state the gateway issued about this very call of this very
// agent, still unexpired. Otherwise the error, invalid params, says why.
//
// It returns the call to decide: m with the round trip the held call had
// with its upstream (State.Carry), which the answer does not carry.
func admitAnswer(ap Approver, a *approvalAnswer, m *intercept.Message, cc intercept.CallContext) (*intercept.Message, error) {
	refuse := func(why string) error {
		return &intercept.WireError{Code: intercept.CodeInvalidParams,
			Message: fmt.Sprintf("invalid params: inputResponses[%q] not accepted: %s; the call was not decided", approvalInputKey, why)}
	}
	if ap == nil {
		return nil, refuse("on this gateway an operator approves held calls (sluice approvals approve ID), not the client")
	}
	sealer, ok := ap.(stateSealer)
	if !isModern(cc.ProtocolVersion) || !ok {
		return nil, refuse("it answers only the gateway's own 2026-07-28 input_required result")
	}
	st, err := sealer.OpenState(a.state)
	if err == nil && st.Carry != nil {
		m, err = withRoundTrip(m, st.Carry)
	}
	if err == nil {
		// The held call's own round trip, carried back: the approval
		// binds the upstream's state it had (approval.CallHash).
		d := &intercept.ActionDescriptor{Upstream: cc.Upstream, ToolName: m.Name, Parameters: m.Arguments, Agent: cc.Agent, CallExtra: intercept.CallExtra(m), Meta: m.Meta}
		if v := intercept.ValidMember(m.Params, "requestState"); v.Kind() == '"' {
			_ = json.Unmarshal(v, &d.UpstreamState)
		}
		err = st.Check(d)
	}
	if err != nil {
		return nil, refuse(err.Error() + "; send the call again without inputResponses to be asked again")
	}
	a.sealed = st
	return m, nil
}

// roundTripMembers are the params members of a call's round trip with its
// upstream (2026-07-28): the client's answers to what the upstream asked
// and the upstream's state.
var roundTripMembers = [...]string{"inputResponses", "requestState"}

// roundTrip returns the members of held call m's round trip with its
// upstream, as one object, or nil when it has none: the gateway's own
// question replaces them in the client's answer (takeApprovalAnswer), so
// its sealed state keeps them (State.Carry) for the answering retry.
// Without them that retry would be another call than the one held (its
// approval binds the answers), and the upstream would ask again.
func roundTrip(m *intercept.Message) jsontext.Value {
	var out jsontext.Value
	for _, k := range roundTripMembers {
		if v := intercept.ValidMember(m.Params, k); v != nil {
			if out == nil {
				out = jsontext.Value("{}")
			}
			var err error
			if out, err = intercept.WithMember(out, k, v); err != nil {
				return nil
			}
		}
	}
	return out
}

// withRoundTrip returns m with the members of carry (roundTrip) in its
// params, decoded again.
func withRoundTrip(m *intercept.Message, carry jsontext.Value) (*intercept.Message, error) {
	params := m.Params
	for _, k := range roundTripMembers {
		if v := intercept.ValidMember(carry, k); v != nil {
			var err error
			if params, err = intercept.WithMember(params, k, v); err != nil {
				return nil, err
			}
		}
	}
	raw, err := intercept.WithMember(m.Raw, "params", params)
	if err != nil {
		return nil, err
	}
	return intercept.DecodeMessage(raw)
}

// takeApprovalAnswer recognises a retried tools/call that answers the
// gateway's input_required result: its params.inputResponses has the
// gateway's entry. It returns the call with inputResponses and
// requestState removed, decoded again, and the answer. ok is false for any
// other message, which stays as it is: an upstream's own input_required
// round trips pass through untouched.
func takeApprovalAnswer(m *intercept.Message) (stripped *intercept.Message, ans approvalAnswer, ok bool, err error) {
	if !m.IsCall() {
		return nil, ans, false, nil
	}
	// Most calls answer nothing: without the key's bytes (or a \u escape
	// that could spell them) there is no entry to look for.
	if !bytes.Contains(m.Params, approvalInputKeyBytes) && !bytes.Contains(m.Params, []byte(`\u`)) {
		return nil, ans, false, nil
	}
	mine := intercept.ValidMember(intercept.ValidMember(m.Params, "inputResponses"), approvalInputKey)
	if mine == nil {
		return nil, ans, false, nil
	}
	if st := intercept.ValidMember(m.Params, "requestState"); st.Kind() == '"' {
		// Into a variable of its own: the address of ans would put it on
		// the heap for every call, answering or not.
		var state string
		_ = json.Unmarshal(st, &state)
		ans.state = state
	}
	ans.approve, ans.answered = readApproval(mine)
	// Case variants go too: an upstream decoding case-insensitively must
	// not find a round-trip member the gateway meant to remove.
	params, err := withoutMembers(m.Params, "inputResponses", "requestState")
	if err != nil {
		return nil, ans, false, err
	}
	raw, err := intercept.WithMember(m.Raw, "params", params)
	if err != nil {
		return nil, ans, false, err
	}
	stripped, err = intercept.DecodeMessage(raw)
	if err != nil {
		return nil, ans, false, err
	}
	return stripped, ans, true, nil
}

// withoutMembers returns a copy of the JSON object obj without the members
// whose names equal one of keys, ignoring case.
func withoutMembers(obj jsontext.Value, keys ...string) (jsontext.Value, error) {
	dec := jsontext.NewDecoder(bytes.NewReader(obj))
	if tok, err := dec.ReadToken(); err != nil || tok.Kind() != '{' {
		return nil, &intercept.WireError{Code: intercept.CodeInvalidParams, Message: "invalid params: want an object"}
	}
	var out bytes.Buffer
	out.Grow(len(obj))
	out.WriteByte('{')
	n := 0
	for dec.PeekKind() != '}' {
		tok, err := dec.ReadToken()
		if err != nil {
			return nil, err
		}
		key := tok.String()
		val, err := dec.ReadValue()
		if err != nil {
			return nil, err
		}
		drop := false
		for _, k := range keys {
			drop = drop || strings.EqualFold(key, k)
		}
		if drop {
			continue
		}
		if n > 0 {
			out.WriteByte(',')
		}
		n++
		q, _ := jsontext.AppendQuote(nil, key)
		out.Write(q)
		out.WriteByte(':')
		out.Write(val)
	}
	out.WriteByte('}')
	return out.Bytes(), nil
}

// check decides about x's single message. If x carries the user's answer
// to the gateway's approval question (a 2026-07-28 retry, admitted by
// admitAnswer), the answer is applied only when the call is still held
// under the very approval request the question was about — the Gate finds
// that request by this agent and this call's hash — and the call is then
// decided again.
func (g *Gateway) check(ctx context.Context, x *exchange) (dec intercept.Decision, reply []byte, ok bool) {
	cc := x.callContext()
	cc.ClientCanApprove = !x.batch && canAsk(g.opts.Approver, x.msgs[0], x.version, x.sess != nil && x.sess.elicitForm, x.streams)
	if x.listErr != nil {
		ctx = intercept.WithListingFailed(ctx, x.listErr)
	}
	decide := func() {
		g.traceStage(ctx, telemetry.StagePolicy, func(ctx context.Context) { dec, reply, ok = g.ic.CheckDecision(ctx, x.msgs[0], cc) })
	}
	decide()
	if a := x.answer; a != nil && a.answered && !ok && g.opts.Approver != nil && !dec.OperatorOnly &&
		dec.Verdict == intercept.RequireApproval && dec.ApprovalID != "" && dec.ApprovalID == a.sealed.ApprovalID {
		if _, err := g.opts.Approver.Decide(dec.ApprovalID, a.approve, approvedBy(x.agent)); err != nil {
			g.log.Debug("approval answer not applied", "approval", dec.ApprovalID, "err", err)
		}
		id := dec.ApprovalID
		if decide(); !ok {
			endLapsed(ctx, g.opts.Approver, id, x.agent)
		}
	}
	if !ok && dec.Verdict == intercept.RequireApproval {
		markHeld(ctx)
	}
	return dec, reply, ok
}

// heldMarkKey holds, in an inner request's context (a virtual server's,
// aggregator.roundTrip), the mark its call was held for approval: the
// held answer of a tool whose listing declares an outputSchema carries
// no structuredContent to read it from.
type heldMarkKey struct{}

// markHeld marks ctx's inner request, if any, as held (heldMarkKey).
func markHeld(ctx context.Context) {
	if m, _ := ctx.Value(heldMarkKey{}).(*atomic.Bool); m != nil {
		m.Store(true)
	}
}

// askApproval puts the held call of x to the client's user when an
// Approver is configured and the client can be asked, and answers the
// request itself. It reports false when the caller should answer with the
// rendered hold (reply) as before.
func (g *Gateway) askApproval(w http.ResponseWriter, r *http.Request, x *exchange, dec intercept.Decision, reply []byte) bool {
	if g.opts.Approver == nil || x.batch || dec.Verdict != intercept.RequireApproval || dec.ApprovalID == "" || dec.OperatorOnly {
		return false
	}
	m := x.msgs[0]
	form := approvalForm(m, x.rt.up.Name, dec)
	if isModern(x.version) {
		state, ok := sealState(g.opts.Approver, m, dec)
		if !ok {
			return false
		}
		writeJSON(w, http.StatusOK, inputRequired(m.ID, form, state))
		return true
	}
	// The question travels on the POST's own SSE stream, and the call then
	// goes to the upstream from here.
	if !canAsk(g.opts.Approver, m, x.version, x.sess != nil && x.sess.elicitForm, x.streams) {
		return false
	}
	g.elicitApproval(w, r, x, dec, form, reply)
	return true
}

// canAsk reports whether a held call m could be put to the client's user,
// as askApproval and relay.ask do: there is an Approver, and the client
// declared form elicitation — from 2026-07-28 on in m's _meta (and the
// Approver seals states), before that at initialize (declared) with a
// transport that can carry the question now (streams: a POST that accepts
// an SSE stream; always on a connection). The decision is told (as
// CallContext.ClientCanApprove), so that an escalation holds a call only
// where someone can answer it.
func canAsk(ap Approver, m *intercept.Message, version string, declared, streams bool) bool {
	if ap == nil {
		return false
	}
	if isModern(version) {
		_, ok := ap.(stateSealer)
		return ok && formElicitation(intercept.ValidMember(m.Meta, metaClientCaps))
	}
	return declared && streams
}

// sealState returns the requestState of a 2026-07-28 approval question
// about held call m, if its client can be asked: it declares form
// elicitation and the Approver can seal states.
func sealState(ap Approver, m *intercept.Message, dec intercept.Decision) (string, bool) {
	sealer, ok := ap.(stateSealer)
	if !ok || !formElicitation(intercept.ValidMember(m.Meta, metaClientCaps)) {
		return "", false
	}
	state, err := sealer.SealState(dec.ApprovalID, roundTrip(m))
	return state, err == nil
}

// inputRequired renders a 2026-07-28 input_required result asking for the
// approval form, with state (sealed) as requestState.
func inputRequired(id jsontext.Value, form elicitParams, state string) []byte {
	type inputRequest struct {
		Method string       `json:"method"`
		Params elicitParams `json:"params"`
	}
	b, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "result": map[string]any{
		"resultType":    "input_required",
		"inputRequests": map[string]inputRequest{approvalInputKey: {Method: "elicitation/create", Params: form}},
		"requestState":  state,
	}}, json.Deterministic(true), jsontext.AllowInvalidUTF8(true))
	if err != nil {
		return intercept.ErrorResponse(id, err)
	}
	return b
}

// elicitApproval answers the held call of x with an SSE stream: the
// elicitation/create request first, then, once the user answered (or an
// operator decided, or the request expired), the call's outcome: the
// upstream's answer when it was approved, else the denial.
func (g *Gateway) elicitApproval(w http.ResponseWriter, r *http.Request, x *exchange, dec intercept.Decision, form elicitParams, held []byte) {
	ctx := r.Context()
	id, answers := x.sess.expectAnswer(approvalIDPrefix)
	defer x.sess.dropAnswer(id)
	key := x.msgs[0].IDKey()
	// Recorded where the session's other replicas, which its client's
	// cancellation may reach, find it (heldshare.go): a call that could be
	// cancelled unseen is not held.
	shared, cancelled, err := g.shareHold(ctx, x, dec.ApprovalID)
	if err != nil {
		g.log.Warn("held call refused: the session's shared store did not record it", "approval", dec.ApprovalID, "err", err)
		if wd, ok := g.opts.Approver.(withdrawer); ok {
			_, _ = wd.Withdraw(dec.ApprovalID, "sluice")
		}
		writeJSON(w, http.StatusOK, intercept.ErrorResponse(x.msgs[0].ID, errHoldUnshared))
		return
	}
	hold := x.sess.held.hold(key, dec.ApprovalID)
	left := false // the client went away, or answered the question with an error: it may still cancel the call
	defer func() {
		if left {
			x.sess.held.releaseLater(key, hold)
		} else {
			x.sess.held.release(key, hold)
		}
		if shared != nil {
			grace := time.Duration(0)
			if left {
				grace = cancelGrace
			}
			time.AfterFunc(grace, func() {
				if _, err := shared.forget(g.ctx); err != nil {
					g.log.Debug("a held call's record in the shared store lapses by itself", "ttl", holdTTL, "err", err)
				}
			})
		}
	}()
	select {
	case <-hold.cancelled:
		// The client cancelled the call before it was held: through
		// this replica while it was being decided (heldcalls.go).
		cancelled = true
	default:
	}
	if cancelled {
		// Or through another replica before its hold was recorded
		// (heldshare.go). It is not held, its request is withdrawn, and,
		// as for any cancelled request, no answer follows: the stream
		// ends empty.
		if wd, ok := g.opts.Approver.(withdrawer); ok {
			_, _ = wd.Withdraw(dec.ApprovalID, cancelledBy(x.agent))
		}
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		return
	}

	// An operator may decide through the admin API meanwhile, or the
	// request may expire: either ends the wait too.
	waitCtx, stopWait := context.WithCancel(ctx)
	decided := make(chan struct{})
	var waited approval.Request // written before decided is closed
	var waitErr error
	go func() {
		defer close(decided)
		waited, waitErr = g.opts.Approver.Wait(waitCtx, dec.ApprovalID)
	}()
	defer func() { stopWait(); <-decided }()

	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	send := func(msg []byte) error {
		if err := g.writeSSEMessage(w, msg); err != nil {
			return err
		}
		return rc.Flush()
	}
	req, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": jsontext.Value(id), "method": "elicitation/create", "params": form},
		json.Deterministic(true), jsontext.AllowInvalidUTF8(true))
	if err != nil || send(req) != nil {
		return
	}

	var renew <-chan time.Time
	if shared != nil {
		t := time.NewTicker(cmp.Or(g.opts.holdRenew, holdRenew))
		defer t.Stop()
		renew = t.C
	}
	// withdraw ends the wait for a call its client cancelled through
	// another replica, as for one it cancelled here (heldcalls.go).
	withdraw := func() {
		if wd, ok := g.opts.Approver.(withdrawer); ok {
			_, _ = wd.Withdraw(dec.ApprovalID, cancelledBy(x.agent))
		}
		cancel := fmt.Sprintf(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":%s,"reason":"the client cancelled the call"}}`, id)
		_ = send([]byte(cancel))
	}

	// A session past its maximum age is served by no replica (sealed.go):
	// its held call goes nowhere, even approved.
	var expiry <-chan time.Time
	if left, ok := g.heldLeft(x); ok {
		t := time.NewTimer(max(left, 0))
		defer t.Stop()
		expiry = t.C
	}

	var ans *intercept.Message
	for waiting, elsewhere := true, (<-chan struct{})(decided); waiting; {
		select {
		case <-expiry:
			g.endExpiredHold(x, dec.ApprovalID, send)
			return
		case <-renew:
			if cancelled, err := shared.check(ctx); holdLost(err) {
				// Written again, it would hide a cancellation that found
				// nothing meanwhile: the hold ends, unsent.
				g.log.Warn("held call not sent: its record in the shared store was lost", "approval", dec.ApprovalID)
				if wd, ok := g.opts.Approver.(withdrawer); ok {
					_, _ = wd.Withdraw(dec.ApprovalID, "sluice")
				}
				shared = nil // nothing to forget
				_ = send(intercept.ErrorResponse(x.msgs[0].ID, errHoldLost))
				return
			} else if err != nil {
				g.log.Warn("a held call's record in the shared store not renewed", "approval", dec.ApprovalID, "err", err)
			} else if cancelled {
				withdraw()
				return
			}
		case <-ctx.Done():
			// The client went away: the request stays pending for an
			// operator, unless the client cancels the call after.
			left = true
			return
		case <-g.ctx.Done():
			return
		case <-hold.cancelled:
			// The client cancelled the call (heldcalls.go): it is not
			// answered, and the question is withdrawn.
			cancel := fmt.Sprintf(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":%s,"reason":"the client cancelled the call"}}`, id)
			_ = send([]byte(cancel))
			return
		case ans = <-answers:
			waiting = false
		case <-elsewhere:
			if waitErr != nil {
				// The Approver cannot tell; the user can still answer.
				g.log.Warn("cannot watch approval request", "approval", dec.ApprovalID, "err", waitErr)
				elsewhere = nil
				continue
			}
			if waited.Status == approval.Withdrawn {
				// The client cancelled the call through another replica:
				// it is not answered, and the question is withdrawn.
				withdraw()
				return
			}
			// Decided through the admin API, or expired: withdraw the question.
			cancel := fmt.Sprintf(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":%s,"reason":"the approval was decided elsewhere or expired"}}`, id)
			if send([]byte(cancel)) != nil {
				return
			}
			waiting = false
		}
	}
	if ans != nil {
		approve, answered := false, false
		if ans.Kind == intercept.KindResponse {
			approve, answered = readApproval(ans.Result)
		}
		if !answered {
			// The client could not ask its user: the call stays held. Or
			// its user gave up: go-sdk's client answers the question with
			// an error, then cancels the call, which still withdraws the
			// request (as for a client that went away).
			_ = send(held)
			left = true
			return
		}
		if _, err := g.opts.Approver.Decide(dec.ApprovalID, approve, approvedBy(x.agent)); err != nil {
			g.log.Debug("approval answer not applied", "approval", dec.ApprovalID, "err", err)
		}
	}
	if left, ok := g.heldLeft(x); ok && left <= 0 {
		g.endExpiredHold(x, dec.ApprovalID, send)
		return
	}
	if !x.sess.held.release(key, hold) {
		return // cancelled meanwhile: it goes nowhere, and gets no answer
	}
	if shared != nil {
		// Cancelled through another replica whose withdrawal this
		// replica's approvals store did not see, it goes nowhere either;
		// not knowing, it is not sent. Checked and forgotten at once: a
		// cancellation through another replica after this reaches the
		// call where it runs (a record kept until the answer had that
		// replica take it as for a held call, and the upstream never
		// heard of it).
		cancelled, err := shared.forget(ctx)
		if err != nil {
			g.log.Warn("approved call not sent: the session's shared store did not say whether it was cancelled through another replica", "approval", dec.ApprovalID, "err", err)
			_ = send(intercept.ErrorResponse(x.msgs[0].ID, errHeldUnchecked))
			return
		}
		shared = nil // forgotten
		if cancelled {
			return
		}
	}
	if _, reply, ok := g.check(ctx, x); !ok {
		endLapsed(ctx, g.opts.Approver, dec.ApprovalID, x.agent)
		_ = send(reply)
		return
	}
	g.relayInto(w, r, x, send)
}

// relayInto forwards the call of x, now allowed, to its HTTP upstream and
// passes the answer on through send, the SSE stream already open to the
// client: event by event when the upstream streams, else as one event.
func (g *Gateway) relayInto(w http.ResponseWriter, r *http.Request, x *exchange, send func([]byte) error) {
	if x.rt.url == nil {
		g.bridgeInto(r, x, send)
		return
	}
	ctx := r.Context()
	id := x.msgs[0].ID
	out, endUpstream, err := g.upstreamCall(ctx, r, x)
	var upErr error // what went wrong with the call, for its span and metric
	defer func() { endUpstream(upErr) }()
	var resp *http.Response
	if err == nil {
		resp, err = g.do(x.rt, out)
	}
	if err != nil {
		upErr = err
		if ctx.Err() != nil {
			upErr = errCancelled
			g.keepSent(x)
		} else {
			g.log.Warn("upstream request failed", "upstream", x.rt.up.Name, "err", err)
			_ = send(intercept.ErrorResponse(id, upstreamError(x.rt.up.Name, err)))
		}
		return
	}
	defer resp.Body.Close()
	upErr = statusError(resp)
	if err := identityBody(resp); err != nil {
		upErr = err
		_ = send(intercept.ErrorResponse(id, upstreamError(x.rt.up.Name, err)))
		return
	}
	ob := &observer{g: g, rt: x.rt, sess: x.sess, pending: x.requests(), cursors: x.cursors(), cc: x.callContext(), swap: x.swap}
	if isEventStream(resp.Header) {
		ob.stream = true
		err := g.pipeEvents(ctx, w, resp.Body, ob)
		ob.keep(err == errCancelled)
		if upErr == nil {
			upErr = err
		}
		if upErr == nil {
			upErr = ob.failed
		}
		if err != nil && err != errCancelled {
			// As in forward: the call gets an error, not silence.
			g.log.Warn("upstream event stream broke", "upstream", x.rt.up.Name, "err", err)
			ob.failUnanswered(w, upstreamError(x.rt.up.Name, err))
		}
		return
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, g.opts.maxAnswer()+1))
	if err == nil && int64(len(b)) <= g.opts.maxAnswer() {
		if x.swap != nil {
			b = x.swap.restore(b)
		}
		if gone := intercept.PrincipalFrom(ctx).Gone(); gone != nil {
			// As in forward: revoked while the upstream worked.
			_ = send(intercept.ErrorResponse(id, gone))
			return
		}
		m, derr := intercept.DecodeMessage(b)
		switch {
		case derr != nil || m.Kind != intercept.KindResponse && m.Kind != intercept.KindError:
			err = fmt.Errorf("HTTP %d without a JSON-RPC response", resp.StatusCode)
		case m.IDKey() != x.msgs[0].IDKey():
			// A client takes a response by its id, whatever stream it
			// comes on: one to another request would go out unscreened.
			err = errStrayResult
		default:
			if upErr == nil {
				upErr = responseError(m)
			}
			// Screened and recorded as on every other path: a task
			// handle is the caller's before she has it.
			ob.lists(b)
			shown := ob.filter(ctx, b)
			if shown != nil {
				_ = send(shown)
			}
			ob.message(b)
			return
		}
	} else if err == nil {
		err = &answerTooLarge{g.opts.maxAnswer()}
	}
	if upErr == nil {
		upErr = err
	}
	if ctx.Err() == nil {
		g.withheld.answer(err)
		g.log.Warn("upstream answer not passed on", "upstream", x.rt.up.Name, "err", err)
	}
	_ = send(intercept.ErrorResponse(id, upstreamError(x.rt.up.Name, err)))
}

// heldLeft is how long the session of x, holding a call, has before it
// expires (sealer.left): the virtual session's when x is an inner call
// of one, which expires first; false if it does not.
func (g *Gateway) heldLeft(x *exchange) (time.Duration, bool) {
	left, ok := g.sealer.left(x.sess.id)
	if vl, vok := g.sealer.left(x.virtual); vok && (!ok || vl < left) {
		left, ok = vl, true
	}
	return left, ok
}

// endExpiredHold ends the hold of x's call under approval id: its
// session reached its maximum age. The request is ended, approved or
// not, and the call answered with the session's expiry: an approval
// given for it must not send the same call in another session.
func (g *Gateway) endExpiredHold(x *exchange, id string, send func([]byte) error) {
	if a, ok := g.opts.Approver.(abandoner); ok {
		_, _ = a.Abandon(id, "session-expired:"+cmp.Or(x.agent, "client"))
	}
	_ = send(intercept.ErrorResponse(x.msgs[0].ID, &intercept.WireError{Code: intercept.CodeInvalidRequest, Message: g.sealer.errSessionExpired().Error()}))
}
