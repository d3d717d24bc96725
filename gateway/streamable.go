package gateway

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/sluicehq/sluice/gateway/transport"
	"github.com/sluicehq/sluice/intercept"
	"github.com/sluicehq/sluice/telemetry"
)

const (
	hdrSession  = "Mcp-Session-Id"
	hdrVersion  = "Mcp-Protocol-Version"
	hdrMethod   = "Mcp-Method"
	hdrName     = "Mcp-Name"
	hdrLastEvID = "Last-Event-ID"
	// modernVersion is the first stateless MCP version; later versions
	// compare greater as strings.
	modernVersion = "2026-07-28"
)

func isModern(v string) bool { return v >= modernVersion }

// otherEra reports whether header, a request's Mcp-Protocol-Version, names
// a version MCP defines of another era than session's, its session's
// version: a 2025-era session's request that says 2026-07-28, or the
// reverse. A client that keeps the version it asked for after its server
// chose an earlier one of the same era is left alone, as is a header
// that names no version (a closed upstream is sent the session's).
func otherEra(header, session string) bool {
	return header != "" && session != "" && mcpVersions[header] && isModern(header) != isModern(session)
}

// handleMCP serves the Streamable HTTP endpoint /mcp/{name}.
func (g *Gateway) handleMCP(w http.ResponseWriter, r *http.Request) {
	if name := r.PathValue("name"); name != "" {
		if a := g.virtual[name]; a != nil {
			a.ServeHTTP(w, r)
			return
		}
	}
	rt := g.lookupRoute(w, r)
	if rt == nil {
		return
	}
	switch r.Method {
	case http.MethodPost:
		g.post(w, r, rt)
	case http.MethodGet:
		g.get(w, r, rt)
	case http.MethodDelete:
		g.delete(w, r, rt)
	default:
		w.Header().Set("Allow", "GET, POST, DELETE")
		writeJSONRPCError(w, http.StatusMethodNotAllowed, nil, &intercept.WireError{Code: intercept.CodeInvalidRequest,
			Message: "method " + r.Method + " is not allowed on an MCP endpoint"})
	}
}

// exchange is one POST on its way through the gateway.
type exchange struct {
	rt      *route
	sess    *session
	msgs    []*intercept.Message
	batch   bool
	body    []byte
	version string
	agent   string
	owner   principal // of the session, or of the session this exchange may start
	// clientName is the name the client gave itself when agent is the
	// authenticated principal instead.
	clientName string
	// answer is the user's answer to the gateway's approval question that
	// arrived with this (2026-07-28) call and was removed from it.
	answer *approvalAnswer
	// client is the address the request came from; lease, the place in
	// the session limits admitted for the session an initialize opens,
	// until the session takes it (takeLease) or the POST ends.
	client string
	lease  *lease
	// streams: the POST accepts an SSE stream, on which a 2025-era
	// approval question can travel.
	streams bool
	// principal is the request's authenticated principal, if any: calls
	// are decided with it, and so must the tools/list answers screened
	// on a bridged upstream's reader, far from the request.
	principal *intercept.Principal
	// virtual is the virtual server's session this exchange is an inner
	// request of (aggregate.go), "" for none: the session policy sees.
	virtual string
	// seq numbers the exchange in the gateway: without a session, its
	// requests' answers are told from another client's by it
	// (intercept.CallContext.Exchange).
	seq string
	// swap is what the exchange was sent upstream with in place of the
	// client's ids (ids.go); nil: the client's own.
	swap *idSwap
	// hold is the exchange's hold on its requests' ids on the session
	// (replay.go); nil: none.
	hold *hold
	// listErr is why the listing classify made for its call failed
	// (intercept.ListForParamHeaders): the call is denied, not listed for
	// again.
	listErr error
}

// listsTools reports whether x asks for a tools/list.
func (x *exchange) listsTools() bool {
	for _, m := range x.msgs {
		if m.Kind == intercept.KindRequest && m.Method == "tools/list" {
			return true
		}
	}
	return false
}

// callContext is what the interceptor is told about x.
func (x *exchange) callContext() intercept.CallContext {
	cc := intercept.CallContext{Upstream: x.rt.up.Name, Target: x.rt.up.target(), Agent: x.agent, ProtocolVersion: x.version, ClientName: x.clientName, Principal: x.principal}
	if x.listsTools() {
		// Only a tools/list answer is recorded with them (the inventory's
		// capability sets): finding them in every request's _meta, once
		// for each time the interceptor is told about x, was 2 % of a
		// call's CPU (sluice bench, 2026-07-28 calls).
		cc.ClientCapabilities = x.clientCapabilities()
	}
	if x.rt.lister != nil {
		cc.Lister = x.rt.lister
	}
	switch {
	case x.virtual != "":
		// The client's one session, whichever upstream's inner session
		// carries the call: a route rule's session scope is the client's.
		cc.SessionID = telemetry.SessionRef(x.virtual)
	case x.sess != nil:
		cc.SessionID = x.sess.ref()
	default:
		cc.Exchange = x.seq
	}
	switch {
	case x.sess != nil && x.sess.bridge != nil:
		cc.TaskScope = x.sess.ref() // its own upstream process
	case x.sess == nil && x.rt.url == nil && x.principal != nil:
		// A principal's 2026-07-28 request to a bridged upstream: its
		// connection (statelessPool) is its own, whose task ids another
		// principal's may repeat (TestStatelessPrincipalsTaskIDsRepeat);
		// it has one on each replica, so what is kept of them is shared
		// still (TestStatelessPrincipalsRequestStateAcrossReplicas).
		cc.TaskScope, cc.SharedTaskScope = "principal:"+x.principal.ID, true
	}
	return cc
}

// cursors maps the ids of the exchange's tools/list requests asked with a
// cursor to it (intercept.ListCursor).
func (x *exchange) cursors() map[string]string { return listCursors(x.msgs) }

// requests maps the ids of the exchange's requests to their methods.
func (x *exchange) requests() map[string]string {
	var out map[string]string
	for _, m := range x.msgs {
		if m.Kind == intercept.KindRequest {
			if out == nil {
				out = make(map[string]string, len(x.msgs))
			}
			out[m.IDKey()] = m.Method
		}
	}
	return out
}

func (g *Gateway) post(w http.ResponseWriter, r *http.Request, rt *route) {
	if cs := contentCodings(r.Header); len(cs) > 0 {
		// Decided on as sent, the body could mean something else to an
		// upstream that undoes the coding (express.json does).
		writeJSONRPCError(w, http.StatusUnsupportedMediaType, nil, &intercept.WireError{Code: intercept.CodeInvalidRequest,
			Message: fmt.Sprintf("the request has Content-Encoding %q; send the body with no content coding", strings.Join(cs, ", "))})
		return
	}
	body, err := readBody(http.MaxBytesReader(w, r.Body, g.opts.maxBody()), r.ContentLength)
	if err != nil {
		var tooBig *http.MaxBytesError
		if le, ok := asLimitError(err); ok {
			writeLimitError(w, nil, le)
			return
		}
		if errors.As(err, &tooBig) {
			writeJSONRPCError(w, http.StatusRequestEntityTooLarge, nil, &intercept.WireError{Code: intercept.CodeInvalidRequest,
				Message: fmt.Sprintf("request body exceeds the limit of %d bytes", tooBig.Limit)})
			return
		}
		writeJSONRPCError(w, http.StatusBadRequest, nil, &intercept.WireError{Code: intercept.CodeParseError, Message: "reading request body: " + err.Error()})
		return
	}
	msgs, batch, err := intercept.Decode(body)
	if err != nil {
		writeJSONRPCError(w, http.StatusBadRequest, nil, err)
		return
	}
	x := &exchange{rt: rt, msgs: msgs, batch: batch, body: body, client: clientAddr(r), principal: intercept.PrincipalFrom(r.Context()), seq: strconv.FormatUint(g.exchanges.Add(1), 10)}
	x.virtual, _ = r.Context().Value(virtualSessionKey{}).(string)
	x.streams = strings.Contains(r.Header.Get("Accept"), "text/event-stream")
	var firstID jsontext.Value
	if !batch {
		firstID = msgs[0].ID
	}
	c, err := g.ident.identify(r, msgs)
	if err != nil {
		writeJSONRPCError(w, http.StatusBadRequest, firstID, err)
		return
	}
	x.owner = c.principal()
	if owner, ok := r.Context().Value(virtualOwnerKey{}).(principal); ok && x.virtual != "" {
		// An inner request of a virtual session: its agent is the
		// session's, fixed at its initialize, whose clientInfo this
		// request does not carry. Before, one to an upstream that gave no
		// session was decided as the agent "" (nobody): route memory,
		// manifest, rate limits and approvals of another
		// (TestAttackVirtualSessionlessUpstreamNobody).
		x.owner = owner
	}
	if sid := r.Header.Get(hdrSession); sid != "" {
		var err error
		if x.sess, err = g.session(r.Context(), sid, rt, c, x.client); x.sess == nil {
			writeSessionError(w, firstID, err)
			return
		}
		// In flight until its answer is passed on, or its client or
		// upstream gave up: the session is not idle meanwhile.
		g.sessions.use(x.sess)
		defer g.sessions.done(x.sess)
		x.owner = x.sess.owner
		_, v := x.sess.info()
		if err := c.continues(v); err != nil {
			g.refusals().refused("streamable-http", rt.up.Name, x.sess.id, x.owner, c, err)
			writeJSONRPCError(w, http.StatusBadRequest, firstID, err)
			return
		}
	}
	x.agent, x.clientName = x.owner.agent, x.owner.clientName()
	if err := g.classify(r, x, c.version); err != nil {
		writeJSONRPCError(w, http.StatusBadRequest, firstID, err)
		return
	}
	if x.sess != nil {
		// Their ids are these requests' now (replay.go), unless one is
		// still waiting on another of the session's exchanges: the
		// upstream, and the gateway, could take the one's answer for the
		// other's.
		h, reused, err := g.claimIDs(r.Context(), x.sess, msgs)
		switch {
		case reused != "":
			writeJSONRPCError(w, http.StatusBadRequest, firstID, err)
			return
		case errors.Is(err, errTooManyIDs):
			writeJSONRPCError(w, http.StatusBadRequest, firstID, errTooManyIDs)
			return
		case err != nil:
			writeJSONRPCError(w, http.StatusServiceUnavailable, firstID, errIDsUnchecked)
			return
		}
		defer g.releaseIDs(x.sess, h) // after what the exchange remembers (keep)
		x.hold = h
	}
	if !batch && isApprovalAnswer(msgs[0]) {
		// The client's answer to the gateway's own question (approve.go):
		// the upstream never asked it.
		if x.sess != nil {
			x.sess.deliverAnswer(msgs[0])
		}
		w.WriteHeader(http.StatusAccepted)
		return
	}
	if !batch {
		stripped, ans, ok, err := takeApprovalAnswer(msgs[0])
		if err != nil {
			writeJSONRPCError(w, http.StatusBadRequest, firstID, err)
			return
		}
		if ok {
			// A copy, on the heap only for a call that answers: with the
			// address of ans taken, every call would pay for it.
			a := ans
			call, err := admitAnswer(g.opts.Approver, &a, stripped, x.callContext())
			if err != nil {
				writeJSON(w, http.StatusOK, intercept.ErrorResponse(firstID, err))
				return
			}
			x.msgs[0], x.body, x.answer = call, call.Raw, &a
		}
		// A cancellation's reason is dropped (intercept.Restate): the
		// cancellation goes on whatever policy says of the client.
		if m := intercept.Restate(x.msgs[0]); m != x.msgs[0] {
			x.msgs[0], x.body = m, m.Raw
		}
	}
	if x.sess != nil {
		// A cancellation of a call held for approval ends the hold
		// (heldcalls.go); the upstream never saw that call.
		// One held on another replica is looked up in the session's
		// shared store (heldshare.go), also if the client hangs up
		// meanwhile: the store's timeout bounds it.
		taken := false
		var rest []*intercept.Message
		for _, m := range x.msgs {
			if x.sess.held.cancel(m, g.opts.Approver, x.agent) {
				taken = true
			} else if m.Kind == intercept.KindNotification && m.Method == "notifications/cancelled" {
				rest = append(rest, m) // only these: a call's POST allocates nothing here
				if g.opts.Approver != nil && x.sess.elicitForm {
					// Its call may still be on its way to a hold here.
					x.sess.held.markCancelled(m)
				}
			}
		}
		elsewhere, err := g.cancelShared(context.WithoutCancel(r.Context()), x.sess, rest, x.agent)
		switch {
		case errors.Is(err, errTooManyCancels):
			writeJSONRPCError(w, http.StatusBadRequest, firstID, errTooManyCancels)
			return
		case err != nil:
			g.log.Warn("cancellation refused: the session's shared store did not say whether another replica holds the call", "err", err)
			writeJSONRPCError(w, http.StatusServiceUnavailable, firstID, errCancelUnchecked)
			return
		}
		if taken = taken || elsewhere; taken && !batch {
			w.WriteHeader(http.StatusAccepted)
			return
		}
	}
	cc := x.callContext()
	ctx, endSpan := g.traceCall(r, x)
	defer func() { endSpan(nil) }()
	r = r.WithContext(ctx)
	if batch {
		if reply := checkBatch(r.Context(), g.ic, msgs, cc); reply != nil {
			writeJSON(w, http.StatusOK, reply)
			return
		}
	} else if dec, reply, ok := g.check(ctx, x); !ok {
		sub := intercept.WithheldAnswer(x.msgs[0], dec)
		if sub == nil {
			if !g.askApproval(w, r, x, dec, reply) {
				writeJSON(w, http.StatusOK, reply)
			}
			return
		}
		// The client's answer to the upstream's request carried data past
		// a closed route: the upstream is told it was withheld, so that its
		// request ends now (the decision is on record).
		x.msgs[0], x.body = sub, sub.Raw
	}
	if x.sess == nil && !batch && msgs[0].Method == "initialize" {
		// A new session: counted before anything is started upstream.
		if x.lease, err = g.limits.admit(string(TransportStreamableHTTP), x.agent, x.client); err != nil {
			le, _ := asLimitError(err)
			writeLimitError(w, firstID, le)
			return
		}
		defer func() { x.lease.release() }() // unless a session took it
	}
	if x.sess == nil && !batch && msgs[0].Method == methodListen && isModern(x.version) && r.Context().Value(virtualListenKey{}) == nil {
		// A 2026-07-28 subscription lasts as a session does, and holds a
		// place in the session limits while it is open (a virtual
		// server's holds one for all its upstreams': listen).
		l, err := g.limits.admit(string(TransportStreamableHTTP), x.agent, x.client)
		if err != nil {
			le, _ := asLimitError(err)
			writeLimitError(w, firstID, le)
			return
		}
		defer l.release()
	}
	if rt.url == nil {
		g.bridgePost(w, r, x)
		return
	}
	g.forward(w, r, x)
}

// virtualListenKey marks, in an inner request's context, a virtual
// server's subscription to an upstream, whose place in the session limits
// the virtual server's subscription holds.
type virtualListenKey struct{}

// errNoSession answers a request for a session that is not there for it.
var errNoSession = &intercept.WireError{Code: intercept.CodeInvalidRequest,
	Message: "session not found: it ended, belongs to another route or to another agent; start a new session with initialize"}

// classify works out the protocol version of an exchange and
// enforces that the MCP headers agree with the body (SEP-2243): a request
// whose headers say one thing and whose body says another is refused before
// anything reaches the upstream. requestsVersion is the version the
// exchange's requests declare in _meta, as identify found it (it refuses
// requests that disagree): their _meta is not read again (issue 13).
func (g *Gateway) classify(r *http.Request, x *exchange, requestsVersion string) error {
	if k := underscoredProtocolHeader(r.Header); k != "" {
		return errUnderscored(k)
	}
	for _, h := range [...]string{hdrVersion, hdrMethod, hdrName} {
		// Forwarded as sent: a second value, which something routing on
		// the header may read instead of the first, would disagree with
		// the body unchecked.
		if n := len(r.Header.Values(h)); n > 1 {
			return mismatch(fmt.Sprintf("the %s header must appear once; it appears %d times", h, n))
		}
	}
	hv := r.Header.Get(hdrVersion)
	metaVersion := requestsVersion
	for _, m := range x.msgs {
		if m.Kind == intercept.KindRequest {
			continue // in requestsVersion
		}
		if v, _ := m.MetaVersion(); v != "" {
			if metaVersion != "" && v != metaVersion {
				return mismatch("requests in one batch declare different protocol versions")
			}
			metaVersion = v
		}
	}
	if metaVersion != "" && hv != "" && metaVersion != hv {
		return mismatch(fmt.Sprintf("%s header %q does not match _meta protocol version %q", hdrVersion, hv, metaVersion))
	}
	// A session keeps the version it negotiated (see claim.continues).
	switch {
	case x.sess != nil:
		_, x.version = x.sess.info()
		if otherEra(hv, x.version) {
			// Another era's header on a session: what reads it in front
			// of the gateway applies that era's rules (2026-07-28's
			// Mcp-Name and Mcp-Param-*), which the session's never
			// checks (TestAttackVirtualSessionMixedEra).
			return mismatch(fmt.Sprintf("%s header %q does not match the session's protocol version %q", hdrVersion, hv, x.version))
		}
	case metaVersion != "":
		x.version = metaVersion
	default:
		x.version = hv
	}

	hm, hasMethod := r.Header.Get(hdrMethod), r.Header.Get(hdrMethod) != ""
	hn, hasName := r.Header.Get(hdrName), len(r.Header.Values(hdrName)) > 0
	if x.batch {
		if hasMethod || hasName {
			return mismatch("Mcp-Method and Mcp-Name headers cannot describe a batch")
		}
		return nil
	}
	m := x.msgs[0]
	if m.Kind != intercept.KindRequest && m.Kind != intercept.KindNotification {
		return nil
	}
	modern := isModern(x.version)
	// SEP-2243 asks for Mcp-Method on notifications too, but the MCP
	// TypeScript SDK v2 client sends notifications/cancelled without it and
	// its server takes such a notification, checking only a header that is
	// present: with nothing to disagree with the body, it is taken here too
	// (TestModernNotificationWithoutMethodHeader).
	if modern && !hasMethod && m.Kind == intercept.KindRequest {
		return mismatch(fmt.Sprintf("%s header is required in protocol version %s", hdrMethod, x.version))
	}
	if hasMethod && hm != m.Method {
		return mismatch(fmt.Sprintf("%s header %q does not match body method %q", hdrMethod, hm, m.Method))
	}
	if intercept.TaskMethod(m.Method) && m.Method != "tasks/result" {
		// The tasks extension names the task in Mcp-Name; when a client
		// sends it, it must be the body's taskId.
		if hasName {
			name, ok := decodeHeaderValue(hn)
			if !ok {
				return mismatch(hdrName + " header has invalid base64 encoding")
			}
			if id := intercept.StringMember(m.Params, "taskId"); name != id {
				return mismatch(fmt.Sprintf("%s header %q does not match body taskId %q", hdrName, name, id))
			}
		}
		return nil
	}
	if !namedMethod(m.Method) {
		if hasName {
			return mismatch(fmt.Sprintf("%s header is not allowed for method %q", hdrName, m.Method))
		}
		return nil
	}
	if modern && !hasName {
		return mismatch(fmt.Sprintf("%s header is required for %s in protocol version %s", hdrName, m.Method, x.version))
	}
	if hasName {
		name, ok := decodeHeaderValue(hn)
		if !ok {
			return mismatch(hdrName + " header has invalid base64 encoding")
		}
		if name != m.Name {
			return mismatch(fmt.Sprintf("%s header %q does not match body name %q", hdrName, name, m.Name))
		}
	}
	if modern && m.Method == "tools/call" {
		// Against the tool as its upstream serves it: one not listed yet
		// is listed now, as deciding the call would list it
		// (TestAttackParamHeaderUnlistedTool).
		x.listErr = g.ic.ListForParamHeaders(r.Context(), x.callContext(), m)
		return g.checkParamHeaders(r.Header, x.rt.up.Name, m)
	}
	return nil
}

// checkParamHeaders refuses a 2026-07-28 tools/call whose Mcp-Param-*
// headers disagree with its arguments (SEP-2243) — a value that differs,
// is not valid base64, appears twice, or is missing while the arguments
// hold it — as the server behind the gateway would (go-sdk does; the
// conformance suite's http-custom-header-server-validation asks it). The
// gateway writes those headers afresh from the arguments policy decided on
// (upstreamCall), so an HTTP server never sees the client's to refuse, and
// a stdio one sees no headers at all: for what routes on them in front of
// the gateway, the check is here or nowhere, whatever the upstream's
// transport (TestAttackParamHeaderStdioUnchecked). A tool the gateway has
// not seen listed, even after listing it for the call (classify), is not
// checked: it has no schema to read the headers from, and the client's
// are dropped.
func (g *Gateway) checkParamHeaders(h http.Header, upstream string, m *intercept.Message) error {
	want := g.ic.ParamHeaders(upstream, m)
	if len(want) == 0 {
		return nil
	}
	// A header a CGI-style reader takes for a declared one, spelt
	// otherwise (Mcp-Param-Tenant-Id beside the declared Tenant_Id): a
	// second value, which such a reader may take instead of the checked
	// one (TestParamHeaderNameWithUnderscore).
	declared := make(map[string]string, len(want))
	for k := range want {
		declared[cgiName(k)] = k
	}
	for k := range h {
		if d, ok := declared[cgiName(k)]; ok && !strings.EqualFold(k, d) {
			return mismatch(fmt.Sprintf("the %s header is another spelling of %s, which some read as the same header; send it as declared, once", k, d))
		}
	}
	for k, v := range want {
		got := h.Values(k)
		switch {
		case len(got) == 0:
			return mismatch(fmt.Sprintf("%s header is required: the arguments hold its value", k))
		case len(got) > 1:
			return mismatch(fmt.Sprintf("the %s header must appear once; it appears %d times", k, len(got)))
		}
		gv, ok := decodeHeaderValue(strings.Trim(got[0], " \t"))
		if !ok {
			return mismatch(k + " header has invalid base64 encoding")
		}
		if wv, _ := decodeHeaderValue(v); gv != wv {
			return mismatch(fmt.Sprintf("%s header %q does not match the argument's value %q", k, gv, wv))
		}
	}
	return nil
}

func mismatch(msg string) error {
	return &intercept.WireError{Code: intercept.CodeHeaderMismatch, Message: "header mismatch: " + msg}
}

func namedMethod(method string) bool {
	return method == "tools/call" || method == "prompts/get" || method == "resources/read"
}

// decodeHeaderValue undoes MCP's =?base64?…?= header value encoding.
func decodeHeaderValue(v string) (string, bool) {
	inner, ok := strings.CutPrefix(v, "=?base64?")
	if !ok {
		return v, true
	}
	inner, ok = strings.CutSuffix(inner, "?=")
	if !ok {
		return v, true
	}
	b, err := base64.StdEncoding.DecodeString(inner)
	if err != nil {
		return "", false
	}
	return string(b), true
}

// hopHeader reports whether k, a canonical header name, is forwarded in
// neither direction: a hop-by-hop header (RFC 9110 §7.6.1), or one the
// gateway rewrites. Nor is Authorization, ever: an agent's credential is
// for the gateway (with auth: configured) or for no one, and passing it
// through would hand an upstream a token whose audience is not that
// upstream (MCP's "token passthrough"); an upstream's own credentials go
// in upstreams[].headers. A switch, not a map: every header of every
// request and answer is asked about, and a map hashes each name.
func hopHeader(k string) bool {
	switch k {
	case "Connection", "Proxy-Connection", "Keep-Alive", "Proxy-Authenticate",
		"Proxy-Authorization", "Te", "Trailer", "Transfer-Encoding", "Upgrade",
		"Content-Length", "Host", hdrSession, "Accept-Encoding", "Authorization",
		// Nor is a content coding: the gateway reads and forwards
		// bodies with none (coding.go).
		"Content-Encoding",
		// An upstream's challenge is about Sluice's credentials, not the
		// agent's: passed on, it would send the agent's client off to get
		// a token from the upstream's authorization server.
		"Www-Authenticate":
		return true
	}
	return false
}

// neverForwarded reports whether k, a header name as net/http keys it,
// is a hop header (hopHeader), written so or with underscores for its
// hyphens: CGI, WSGI and nginx's $http_ variables read Mcp_session_id as
// Mcp-Session-Id, and net/http keys it apart.
func neverForwarded(k string) bool {
	return hopHeader(k) || strings.IndexByte(k, '_') >= 0 && hopHeader(http.CanonicalHeaderKey(strings.ReplaceAll(k, "_", "-")))
}

// connectionListed reports whether conn, the values of a message's
// Connection header, lists k: a header for the next hop alone, which a
// proxy removes (RFC 9110 §7.6.1).
func connectionListed(conn []string, k string) bool {
	for _, v := range conn {
		for tok := range strings.SplitSeq(v, ",") {
			if strings.EqualFold(strings.Trim(tok, " \t"), k) {
				return true
			}
		}
	}
	return false
}

// copyHeaders copies to dst the headers of src but hop headers, those
// src's Connection header lists and those skip reports (nil: none), in
// one pass over src.
func copyHeaders(dst, src http.Header, skip func(name string) bool) {
	conn := src["Connection"]
	// One backing array for the values, as http.Header.Clone has: a slice
	// per header would be an allocation per header per call. Sized for a
	// value a header, as most have; one with more may move the array on,
	// which leaves the slices already handed out as they are (each is
	// capped at its own values).
	all := make([]string, 0, len(src))
	for k, vv := range src {
		if neverForwarded(k) || skip != nil && skip(k) || conn != nil && connectionListed(conn, k) {
			continue
		}
		i := len(all)
		all = append(all, vv...)
		dst[k] = all[i:len(all):len(all)]
	}
}

// upstreamRequest is the request to rt's upstream for r, a client's
// request on sess (nil for none), with body (nil for none). The client's
// headers go on but those the gateway writes, unless the upstream is
// closed to the client (closed: g.ic.Closed of the request's call
// context; headers.go).
func (g *Gateway) upstreamRequest(ctx context.Context, r *http.Request, rt *route, sess *session, closed bool, body []byte) (*http.Request, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	// The route's URL was parsed once; a copy spares formatting and
	// parsing it again for every call. It goes into the URL the request
	// was made with (the empty one's, its own), not a new one.
	out, err := http.NewRequestWithContext(ctx, r.Method, "", rd)
	if err != nil {
		return nil, err
	}
	*out.URL = *rt.url
	out.Host = strings.TrimSuffix(out.URL.Host, ":")
	var dropped []string
	if closed {
		dropped = closedHeaders(out.Header, r, rt, sess)
	} else {
		// The client's Mcp-Param-* headers (SEP-2243) are not passed on:
		// they say what an argument is to whatever routes on them in
		// front of the server, and policy decided on the body.
		// upstreamCall writes them from the body.
		// Nor those spelt as one the gateway sets (gatewaySets).
		skip := intercept.IsParamHeader
		if rt.setHeaders != nil {
			skip = func(k string) bool { return intercept.IsParamHeader(k) || rt.gatewaySets(k) }
		}
		copyHeaders(out.Header, r.Header, skip)
	}
	if body != nil {
		// What policy decided on is UTF-8 JSON (intercept.Decode). The
		// client's Content-Type is not passed on: a charset in it is how a
		// server built on express.json() decodes the body, and in UTF-7 a
		// string of letters the gateway read is quotes and braces to it.
		out.Header.Set("Content-Type", "application/json")
	}
	if h := g.opts.AgentHeader; h != "" {
		if agent, ok := principalAgent(r.Context()); ok {
			// Authenticated: the agent is who the credential says, not
			// what the client wrote in the header; an upstream reading the
			// agent from it gets the proven name
			// (TestAttackAgentHeaderPassedOnOverPrincipal).
			out.Header.Set(h, agent)
		}
	}
	for k, v := range rt.up.Headers {
		out.Header.Set(k, v)
	}
	if sess != nil && sess.upstreamID != "" {
		out.Header.Set(hdrSession, sess.upstreamID)
	}
	// The trace context of the call (its span's, or the one the client
	// sent when nothing records spans): only a POST's context has one.
	telemetry.InjectHTTP(ctx, out.Header)
	if closed {
		dropped = append(dropped, screenTrace(out.Header)...)
		if len(dropped) > 0 {
			g.headerDrops.dropped(rt.up.Name, dropped)
		}
	}
	return out, nil
}

// answered tells the interceptor that x's requests have had their answers
// (intercept.Interceptor.Answered).
func (g *Gateway) answered(x *exchange) {
	cc := x.callContext()
	for _, m := range x.msgs {
		if m.IsAction() {
			g.ic.Answered(cc, m.IDKey())
		}
	}
}

// keepSent has x's session remember x's requests, which went to the
// upstream, or may have, and whose client went away before it answered
// (observer.keep): a request under one of their ids is refused while the
// upstream may yet answer them, and an answer on a resumed stream is
// screened as what it answers.
func (g *Gateway) keepSent(x *exchange) {
	if x.sess == nil {
		return
	}
	ob := &observer{g: g, rt: x.rt, sess: x.sess, stream: true, pending: x.requests(), cursors: x.cursors(), cc: x.callContext(), swap: x.swap}
	ob.keep(true)
}

// forward relays an allowed POST to an HTTP upstream and its answer back,
// JSON or SSE exactly as the upstream chose, streaming event by event.
func (g *Gateway) forward(w http.ResponseWriter, r *http.Request, x *exchange) {
	// The upstream may speak of a task a request creates before its
	// handle, on any stream (taskhold.go): from now until the answer is
	// recorded, the session's streams (or the answer's own) hold that.
	var tasks *taskHold
	creating := creatingTasks(x.msgs)
	if creating != nil {
		if x.sess != nil {
			tasks = x.sess.taskHold(g)
		} else {
			tasks = newTaskHold(g.ic, g.withheld)
		}
		tasks.expect(len(creating))
		defer func() { tasks.settle(len(creating)) }()
	}
	if x.version >= "2026-07-28" {
		// A stateless exchange's answers come on its own response: once it
		// is passed on, or has failed, none is left to issue a state.
		defer g.answered(x)
	}
	out, endUpstream, err := g.upstreamCall(r.Context(), r, x)
	var upErr error // what went wrong with the call, for its span and metric
	defer func() { endUpstream(upErr) }()
	if errors.Is(err, errNothingSent) {
		w.WriteHeader(http.StatusAccepted) // as the upstream would have
		return
	}
	var resp *http.Response
	if err == nil {
		resp, err = g.do(x.rt, out)
	}
	if err != nil {
		upErr = err
		if r.Context().Err() != nil {
			upErr = errCancelled
			// The client went away; nothing to answer. The upstream
			// may have the requests and answer them yet.
			g.keepSent(x)
			return
		}
		g.log.Warn("upstream request failed", "upstream", x.rt.up.Name, "err", err)
		g.failExchange(w, x, err)
		return
	}
	defer resp.Body.Close()
	upErr = statusError(resp)
	if err := identityBody(resp); err != nil {
		upErr = err
		g.log.Warn("upstream answer not readable", "upstream", x.rt.up.Name, "err", err)
		if sid := resp.Header.Get(hdrSession); sid != "" && x.sess == nil {
			g.deleteUpstreamSession(r.Context(), x.rt, sid)
		}
		g.failExchange(w, x, err)
		return
	}

	sess := x.sess
	if sid := resp.Header.Get(hdrSession); sid != "" && sess == nil {
		// Copies, not slices of the upstream's response head and the
		// client's request, which the session would hold whole for its
		// life (a client padding its initialize to max_body_bytes, every
		// session it opens holding that much); capabilities long enough
		// to matter are cut to what names their set, as an adopted
		// session's are.
		sid = strings.Clone(sid)
		caps := bytes.Clone(sealableCaps(x.clientCapabilities()))
		sess = &session{id: g.sessionID(sealedSession{Route: x.rt.up.Name, Upstream: sid, Header: x.owner.header, Agent: x.owner.agent,
			Client: x.owner.client, Version: x.version, Elicit: x.initFormElicitation(), Caps: caps}), route: x.rt.up.Name, upstreamID: sid, owner: x.owner, version: x.version,
			elicitForm: x.initFormElicitation(), caps: caps}
		var err error
		if sess.lease, err = g.takeLease(x); err == nil {
			err = g.sessions.add(sess)
		}
		if err != nil {
			sess.lease.release()
			g.deleteUpstreamSession(r.Context(), x.rt, sid)
			if le, ok := asLimitError(err); ok {
				writeLimitError(w, nil, le)
				return
			}
			writeJSONRPCError(w, http.StatusServiceUnavailable, nil, &intercept.WireError{Code: intercept.CodeInternalError, Message: "gateway session table is full; try again later"})
			return
		}
	}
	copyHeaders(w.Header(), resp.Header, nil)
	plainMediaType(w.Header())
	if sess != nil && resp.Header.Get(hdrSession) != "" {
		w.Header().Set(hdrSession, sess.id)
	}
	ob := &observer{g: g, rt: x.rt, sess: sess, pending: x.requests(), cursors: x.cursors(), cc: x.callContext(), swap: x.swap}
	defer func() {
		if upErr == nil {
			upErr = ob.failed
		}
	}()
	ob.creating, ob.tasks = creating, tasks
	if isEventStream(resp.Header) {
		ob.stream = true
		ctx := r.Context()
		if sess != nil {
			// Ended through another replica, the stream ends (untilEnded),
			// also while the upstream sends nothing: its body is closed.
			var stop func()
			ctx, stop, ob.live = g.untilEnded(ctx, sess.id)
			defer stop()
			defer context.AfterFunc(ctx, func() { resp.Body.Close() })()
		}
		w.WriteHeader(resp.StatusCode)
		err := g.pipeEvents(ctx, w, resp.Body, ob)
		if upErr == nil {
			upErr = err
		}
		if err != nil && err != errCancelled {
			// The upstream's stream broke: the requests it has not
			// answered get an error naming it, so no client call hangs.
			g.log.Warn("upstream event stream broke", "upstream", x.rt.up.Name, "err", err)
			ob.failUnanswered(w, upstreamError(x.rt.up.Name, err))
		}
		ob.keep(err == errCancelled)
		return
	}
	b, err := readBody(io.LimitReader(resp.Body, g.opts.maxAnswer()+1), resp.ContentLength)
	if err != nil && r.Context().Err() != nil {
		upErr = errCancelled
		return // the client went away; nothing to answer
	}
	if err != nil && upErr == nil {
		upErr = err
	}
	if x.swap != nil && err == nil {
		b = x.swap.restore(b)
	}
	if gone := x.principal.Gone(); gone != nil {
		// Authenticated when the request came; a long call's answer
		// comes later, and is withheld as an event stream's is
		// (pipeEvents).
		w.Header().Del("Content-Length")
		answerGone(w, x, gone)
		return
	}
	if unread := unreadAnswer(resp.StatusCode, ob, b, err, g.opts.maxAnswer()); unread != nil {
		// The client could read it otherwise than the gateway did, or
		// read what the gateway never saw: a result unscanned, a task
		// handle unrecorded, a list unscreened. What it is shown is an
		// error.
		if upErr == nil {
			upErr = unread
		}
		g.withheld.answer(unread)
		g.log.Warn("upstream answer not passed on", "upstream", x.rt.up.Name, "err", unread)
		w.Header().Del("Content-Length")
		g.failExchange(w, x, unread)
		return
	}
	shown := b
	switch {
	case resp.StatusCode/100 == 2:
		// Recorded before it is screened (a tool is shown as the
		// inventory, having seen this list, lets it) and before the
		// client has it.
		ob.lists(b)
		shown = ob.filter(r.Context(), b)
	case ob.screensResults() || mayForgeEnvelope(b):
		// An error sent with a failing status is read by the client's
		// model as one sent with 200: the interceptor may withhold it
		// (TestAttackInjectionInFailedAnswer), and it must not pass for
		// the gateway's own denial or hold (screenError). So is an answer the
		// gateway does not read as JSON-RPC (an error page): clients
		// put it in the error they return, or read it as JSON-RPC their
		// own way (TestAttackInjectionInFailedAnswerNotJSONRPC).
		if _, err := ob.decode(b); err != nil {
			if out := ob.screenUnread(b); out != nil {
				shown = out
				w.Header().Set("Content-Type", "application/json")
			}
		} else {
			shown = ob.filter(r.Context(), b)
		}
	}
	if shown == nil {
		// Nothing but messages about another's task: no answer is owed.
		w.Header().Del("Content-Type")
		w.Header().Del("Content-Length")
		w.WriteHeader(http.StatusAccepted)
		return
	}
	if resp.ContentLength >= 0 {
		w.Header().Set("Content-Length", strconv.Itoa(len(shown)))
	}
	w.WriteHeader(resp.StatusCode)
	_, _ = w.Write(shown)
	if resp.StatusCode/100 == 2 {
		ob.message(b)
	}
}

// unreadAnswer returns why b, an upstream's JSON answer to the requests
// of ob (read with err, at most limit+1 bytes of it), must not be passed
// on, or nil. Whatever its status, an answer the gateway could not read
// whole is not: one longer than limit, or one cut short (its bytes may
// be a whole message, and the gateway's own answer would end cleanly). A
// successful answer to requests must also decode as JSON-RPC (not JSON, a
// BOM before it, an event stream labelled otherwise) and carry no result
// for a request it was not asked. An unsuccessful one (4xx, 5xx), which
// is passed on unscreened, must carry no result at all: mcp-go's client
// takes the result in such a body, read by encoding/json (which takes
// the last of two "result" members, invalid UTF-8 and "RESULT" too), for
// its request's answer, where the TypeScript SDK's and the go-sdk's see
// an error; one that may hold a result must decode, and hold none.
func unreadAnswer(status int, ob *observer, b []byte, err error, limit int64) error {
	switch {
	case err != nil:
		return fmt.Errorf("reading the answer: %w", err)
	case int64(len(b)) > limit:
		return &answerTooLarge{limit}
	case len(ob.pending) == 0 || len(bytes.Trim(b, " \t\r\n")) == 0:
		return nil
	case status/100 != 2:
		if !mayHoldMemberFold(b, resultMember) {
			return nil // an error page, or a JSON-RPC error: no result to take
		}
		msgs, derr := ob.decode(b)
		if derr != nil {
			return fmt.Errorf("the answer (HTTP %d) may hold a result and is not JSON-RPC the gateway can read (%v)", status, derr)
		}
		for _, m := range msgs {
			if m.Kind == intercept.KindResponse {
				return fmt.Errorf("the answer carried a result with HTTP status %d, which clients read differently (some as the result, some as an error)", status)
			}
		}
		return nil
	}
	msgs, derr := ob.decode(b)
	if derr != nil {
		return fmt.Errorf("the answer is not JSON-RPC the gateway can read (%v)", derr)
	}
	if ob.strayResult(msgs) {
		return errStrayResult
	}
	return nil
}

// errStrayResult: an answer held a result for a request it was not
// asked, which a client takes by its id (clients keep one table of pending
// requests), unscreened (a tools/list result) and unrecorded.
var errStrayResult = errors.New("the answer carried a result for a request it was not asked")

// answerTooLarge: an upstream's answer is longer than the gateway reads
// (max_answer_bytes), so nothing in it was screened.
type answerTooLarge struct{ limit int64 }

func (e *answerTooLarge) Error() string {
	size := fmt.Sprintf("%d bytes", e.limit)
	if e.limit%(1<<20) == 0 {
		size = fmt.Sprintf("%d MiB", e.limit>>20)
	}
	return "the answer is over " + size + ", the most the gateway reads (max_answer_bytes)"
}

// statusError is what an upstream's HTTP status says about the call: a
// server error (5xx) failed it.
func statusError(resp *http.Response) error {
	if resp.StatusCode < 500 {
		return nil
	}
	return &telemetry.CallError{Type: strconv.Itoa(resp.StatusCode), Message: "upstream answered HTTP " + resp.Status}
}

// plainMediaType leaves an answer's Content-Type its media type alone
// when that is JSON or an event stream, both of which the gateway reads
// as UTF-8 (RFC 8259; the SSE standard): a charset parameter passed on
// would have a client that honours it (Python's httpx-sse decodes events
// by it) read another text than the gateway screened.
func plainMediaType(h http.Header) {
	ct := h.Get("Content-Type")
	i := strings.IndexByte(ct, ';')
	if i < 0 {
		return
	}
	switch mt := strings.ToLower(strings.TrimSpace(ct[:i])); mt {
	case "application/json", "text/event-stream":
		h.Set("Content-Type", mt)
	}
}

func isEventStream(h http.Header) bool {
	return strings.HasPrefix(strings.ToLower(strings.TrimSpace(h.Get("Content-Type"))), "text/event-stream")
}

// pipeEvents copies an SSE stream to the client one event at a time,
// flushing each, with ob's filter applied to every message, and shows every
// message as the upstream sent it to ob (tools/list results before it is
// passed on, the rest after). It returns
// why it stopped before the stream's end: a broken upstream stream, or
// [errCancelled] when the client could no longer be written to.
func (g *Gateway) pipeEvents(ctx context.Context, w http.ResponseWriter, body io.Reader, ob *observer) error {
	ob.sink = newEventSink(w)
	ob.sink.live = ob.live
	defer ob.endSink()
	_ = http.NewResponseController(w).Flush()
	rd := transport.NewSSEReader(body)
	rd.MaxDataBytes = g.opts.maxAnswer()
	var drops dropLog
	var unread error // the last message not delivered for being unreadable
	p := intercept.PrincipalFrom(ctx)
	for {
		ev, err := rd.Next()
		if err == io.EOF {
			if unread != nil {
				// Its answer may have been the one dropped: the requests
				// still waiting get an error rather than nothing.
				ob.failUnanswered(w, upstreamError(ob.rt.up.Name, fmt.Errorf("it sent a message the gateway could not read (%w)", unread)))
			}
			return nil
		}
		if err != nil {
			if ctx.Err() != nil {
				return errCancelled
			}
			return g.withheld.readFailed(err) // an event too long is not passed on
		}
		if err := p.Gone(); err != nil {
			// Authenticated when the request came; a stream outlives
			// that. Its requests are remembered as for a client gone
			// (resumed by a request that authenticates again).
			_ = ob.sink.send(intercept.ErrorResponse(nil, err))
			return errCancelled
		}
		data := ev.Data
		if ob.swap != nil && len(data) > 0 {
			data = ob.swap.restore(data)
		} else if ob.getStream && ob.sess != nil && len(data) > 0 {
			data = ob.sess.replays.restoreTokens(data)
		}
		// Every event's data is a message, whatever its type: clients
		// (mcp-go's) read the data of any event, so an event typed
		// otherwise must not pass unread.
		msg := len(data) > 0
		o := ob
		if msg && ob.resumed {
			o = ob.replay(ctx, data) // the requests it answers, if remembered
			if o.swap != nil {
				data = o.swap.restore(data)
			}
		}
		if msg && !o.listWaiting() {
			// (While a list waits for its answer, filter answers it with
			// an error when a stray comes.)
			msgs, err := o.decode(data)
			switch {
			case err != nil:
				// Not a message the gateway reads, and a client could read
				// it as one: a result under an id spelled 2.0, unscanned
				// and unrecorded, taken as the answer to request 2.
				g.withheld.unreadable(&drops, ob.rt.up.Name, err)
				unread = err
				continue
			case o.strayResult(msgs), o.waitsForList() && o.stray(data):
				// On a list's stream, an error for an id not asked is
				// one too, as it was while the list waited.
				g.withheld.stray(&drops, ob.rt.up.Name)
				continue
			}
		}
		var shown []byte
		if msg {
			o.lists(data)
			// Compacted like every message the gateway writes as an event;
			// one that is not JSON cannot be framed and is not passed on.
			shown = o.filter(ctx, data)
			if n := ob.answeredTasks(data); n > 0 {
				// Its handle is recorded: what was held about the task
				// goes first, in the order the upstream sent it.
				ob.tasks.settle(n)
			}
			if shown == nil {
				continue // about another's task, and nothing else
			}
			ev.Data, err = transport.Compact(shown)
			if err != nil {
				g.log.Warn("message from upstream is not JSON; not delivered", "upstream", ob.rt.up.Name, "err", err)
				continue
			}
		}
		if msg && ob.sess != nil {
			// The ids a closed upstream may be answered under (decoded
			// already, but while a list waits), remembered before the
			// client can read the request: mcp-go's client answered a
			// sampling request in the moment between, its answer was
			// dropped as one to nothing asked, and the upstream's tool
			// waited for it forever (TestCarrySamplingAnswer, 1 run in 25
			// under load). Those passed on only: one withheld was
			// answered by the gateway (TestAttackAnswerToWithheldAsk).
			if msgs, err := o.decode(shown); err == nil {
				ob.sess.askedUp.addRequests(msgs)
			}
		}
		if err := ob.sink.event(ev); err != nil {
			return errCancelled
		}
		if ev.ID != "" && ob.sess != nil {
			ob.sess.passedEvent(ev.ID) // a Last-Event-ID a closed upstream may get
		}
		if msg {
			o.message(data)
			ob.delivered(o)
		}
	}
}

// failExchange answers every request of x with an error naming the upstream.
func (g *Gateway) failExchange(w http.ResponseWriter, x *exchange, cause error) {
	if le, ok := asLimitError(cause); ok {
		var id jsontext.Value
		if !x.batch {
			id = x.msgs[0].ID
		}
		writeLimitError(w, id, le)
		return
	}
	err := upstreamError(x.rt.up.Name, cause)
	if !x.batch {
		writeJSONRPCError(w, http.StatusBadGateway, x.msgs[0].ID, err)
		return
	}
	var out []jsontext.Value
	for _, m := range x.msgs {
		if m.Kind == intercept.KindRequest {
			out = append(out, intercept.ErrorResponse(m.ID, err))
		}
	}
	if len(out) == 0 {
		writeJSONRPCError(w, http.StatusBadGateway, nil, err)
		return
	}
	writeJSON(w, http.StatusBadGateway, marshalArray(out))
}

// answerGone answers the requests of x with gone, the error of a
// credential that no longer holds (intercept.Principal.Gone).
func answerGone(w http.ResponseWriter, x *exchange, gone error) {
	var out []jsontext.Value
	for _, m := range x.msgs {
		if m.Kind == intercept.KindRequest {
			out = append(out, intercept.ErrorResponse(m.ID, gone))
		}
	}
	switch {
	case len(out) == 0:
		w.WriteHeader(http.StatusAccepted)
	case !x.batch:
		writeJSON(w, http.StatusOK, out[0])
	default:
		writeJSON(w, http.StatusOK, marshalArray(out))
	}
}

func marshalArray(vs []jsontext.Value) []byte {
	var b bytes.Buffer
	b.WriteByte('[')
	for i, v := range vs {
		if i > 0 {
			b.WriteByte(',')
		}
		b.Write(v)
	}
	b.WriteByte(']')
	return b.Bytes()
}

// observer looks at messages an upstream sent after they were passed on:
// tools/list results go to the catalog, initialize results fix the
// session's protocol version, the first error response to a pending
// request is kept. Its filter hides tools in them before. An observer is
// used by one goroutine.
type observer struct {
	g       *Gateway
	rt      *route
	sess    *session
	pending map[string]string
	// cursors are the cursors of the tools/list requests in pending
	// asked with one (intercept.ListCursor), by id.
	cursors map[string]string
	cc      intercept.CallContext // of the requests in pending
	// swap gives back the client's ids in what the upstream sent
	// (ids.go); nil: they are the client's.
	swap   *idSwap
	failed error // the first JSON-RPC error answering a pending request
	// answered holds the pending requests whose response has been
	// passed on; only an event stream needs it (failUnanswered).
	answered map[string]bool
	stream   bool // the answer is an event stream
	// getStream: the stream is the session's GET stream, on which an
	// upstream may send the progress of any open request (restoreTokens).
	getStream bool
	// live, if set, says whether the stream may deliver a message: its
	// session was not ended through another replica (untilExpiry).
	live func() error
	// resumed: the stream replays one broken off (Last-Event-ID), whose
	// results answer requests of earlier exchanges; took holds those it
	// took from the session's memory (replay.go), answered those of them
	// passed on.
	resumed bool
	took    map[string]replayCall
	held    *hold // the ids of took, while the stream is open
	// storeFailed is when the session's shared store last did not answer
	// a take: the stream's results for a second after are withheld
	// unasked, rather than each wait out the store's timeout in turn.
	storeFailed time.Time

	// creating holds the task-augmented requests of pending not yet
	// answered, tasks the taskHold they expect (taskhold.go): the
	// session's, or the exchange's own. sink is the event stream a
	// message held for the stream is released to.
	creating map[string]bool
	tasks    *taskHold
	sink     *eventSink

	// The last message decoded, and what came of it: a message is
	// checked and recorded in several steps, and decoded once.
	last     []byte
	lastMsgs []*intercept.Message
	lastErr  error
}

// decode decodes b, a message of the upstream's answer, or returns what
// decoding it gave the last time.
func (o *observer) decode(b []byte) ([]*intercept.Message, error) {
	if len(b) > 0 && len(o.last) == len(b) && &o.last[0] == &b[0] && bytes.Equal(o.last, b) {
		return o.lastMsgs, o.lastErr
	}
	msgs, _, err := intercept.Decode(b)
	o.last, o.lastMsgs, o.lastErr = b, msgs, err
	return msgs, err
}

// failUnanswered writes an error event answering each pending request
// that has had no response, in the order of their ids, with err.
func (o *observer) failUnanswered(w http.ResponseWriter, err error) {
	ids := make([]string, 0, len(o.pending))
	for id := range o.pending {
		if !o.answered[id] {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	if o.answered == nil {
		o.answered = make(map[string]bool, len(ids))
	}
	for _, id := range ids {
		if transport.WriteSSEMessage(w, intercept.ErrorResponse(jsontext.Value(id), err)) != nil {
			return
		}
		o.answered[id] = true
	}
	_ = http.NewResponseController(w).Flush()
}

func (o *observer) message(b []byte) {
	// Only a message that names "error" can be an error response, and only
	// one that names "id" a response at all: the rest need no decoding
	// unless a result is worth reading. (Either name may be spelled with
	// an escape, "\u0069d", which every reader reads as id.)
	errs := o.failed == nil && len(o.pending) > 0 && mayHoldMember(b, errorMember)
	open := o.stream && len(o.answered) < len(o.pending) && mayHoldMember(b, idMember)
	if !errs && !open && !o.wants() {
		return // nothing to learn: skip decoding the response
	}
	msgs, err := o.decode(b)
	if err != nil {
		return
	}
	for _, m := range msgs {
		if _, ok := o.pending[m.IDKey()]; ok && (m.Kind == intercept.KindResponse || m.Kind == intercept.KindError) {
			if o.answered == nil {
				o.answered = make(map[string]bool, len(o.pending))
			}
			o.answered[m.IDKey()] = true
		}
		if _, ok := o.pending[m.IDKey()]; ok && m.Kind == intercept.KindError && o.failed == nil {
			o.failed = responseError(m)
		}
		if m.Kind != intercept.KindResponse {
			continue
		}
		switch method := o.pending[m.IDKey()]; {
		case intercept.ActionMethod(method):
			o.g.ic.ObserveResult(o.cc, m.IDKey(), m.Result)
		case intercept.ShowsTask(method):
			o.g.ic.ObserveTaskResult(o.cc, method, m.Result)
		case method == "initialize":
			if o.sess != nil {
				o.sess.setVersion(protocolVersionFromResult(m.Result))
			}
		}
	}
}

// lists records the tools/list results in b, a message of the upstream's
// answer, before it is passed on: a call the client makes on seeing a
// list is then decided with it. message leaves them alone.
func (o *observer) lists(b []byte) {
	if !o.waitsForList() {
		return
	}
	msgs, err := o.decode(b)
	if err != nil {
		return
	}
	for _, m := range msgs {
		if m.Kind == intercept.KindResponse && o.pending[m.IDKey()] == "tools/list" {
			o.g.ic.ObserveToolsPageWith(o.rt.up.Name, m.Result, o.cursors[m.IDKey()], o.cc.ClientCapabilities)
		}
	}
}

// wants reports whether any pending request has a result worth reading
// after it was passed on (tools/list results are read before: lists).
func (o *observer) wants() bool {
	for _, m := range o.pending {
		if m == "initialize" || (intercept.ActionMethod(m) && o.g.ic.WantsResults()) {
			return true
		}
	}
	return false
}

// get opens the server's GET stream for a session, passing Last-Event-ID
// on so the upstream can resume.
func (g *Gateway) get(w http.ResponseWriter, r *http.Request, rt *route) {
	sess, agent, ok := g.requireSession(w, r, rt)
	if !ok {
		return
	}
	var live func() error
	if sess != nil {
		var stop func()
		r, stop, live = g.untilExpiry(r, sess.id)
		defer stop()
	}
	if rt.url == nil {
		g.bridgeGet(w, r, rt, sess)
		return
	}
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	stop := context.AfterFunc(g.drain, cancel)
	defer stop()
	// No request waits on the stream: the session's owner is who its
	// messages are for (tasks of others are withheld).
	// Without a session, the agent the request names: the closed test
	// is of its route memory.
	cc := intercept.CallContext{Upstream: rt.up.Name, Target: rt.up.target(), Agent: agent, Principal: intercept.PrincipalFrom(r.Context())}
	if owner, ok := r.Context().Value(virtualOwnerKey{}).(principal); ok && sess == nil {
		cc.Agent = owner.agent
	}
	if sess != nil {
		cc.SessionID = sess.ref()
		cc.Agent, cc.ProtocolVersion = sess.info()
	}
	cc.SessionID = policySession(r, cc.SessionID)
	out, err := g.upstreamRequest(ctx, r, rt, sess, g.ic.Closed(ctx, cc), nil)
	if err != nil {
		writeJSONRPCError(w, http.StatusBadGateway, nil, upstreamError(rt.up.Name, err))
		return
	}
	resp, err := g.do(rt, out)
	if err != nil {
		if r.Context().Err() == nil {
			writeJSONRPCError(w, http.StatusBadGateway, nil, upstreamError(rt.up.Name, err))
		}
		return
	}
	defer resp.Body.Close()
	if err := identityBody(resp); err != nil {
		g.log.Warn("upstream stream not readable", "upstream", rt.up.Name, "err", err)
		writeJSONRPCError(w, http.StatusBadGateway, nil, upstreamError(rt.up.Name, err))
		return
	}
	if resp.StatusCode/100 == 2 && resp.StatusCode != http.StatusNoContent && resp.ContentLength != 0 && !isEventStream(resp.Header) {
		// A client may read it as events whatever its type (the
		// TypeScript SDK does): its messages would pass unread. An
		// empty answer has none.
		err := fmt.Errorf("it answered GET with %q, not an event stream", resp.Header.Get("Content-Type"))
		g.withheld.answer(err)
		g.log.Warn("upstream stream not passed on", "upstream", rt.up.Name, "err", err)
		writeJSONRPCError(w, http.StatusBadGateway, nil, upstreamError(rt.up.Name, err))
		return
	}
	copyHeaders(w.Header(), resp.Header, nil)
	plainMediaType(w.Header())
	if sess != nil && resp.Header.Get(hdrSession) != "" {
		w.Header().Set(hdrSession, sess.id)
	}
	w.WriteHeader(resp.StatusCode)
	if isEventStream(resp.Header) {
		ob := &observer{g: g, rt: rt, sess: sess, stream: true, getStream: true, cc: cc, resumed: r.Header.Get(hdrLastEvID) != "", live: live}
		err := g.pipeEvents(ctx, w, resp.Body, ob)
		if err != nil && err != errCancelled {
			g.log.Warn("upstream event stream broke", "upstream", rt.up.Name, "err", err)
		}
		ob.keep(err == errCancelled)
		g.releaseIDs(sess, ob.held)
		return
	}
	_, _ = io.Copy(w, resp.Body) // an HTTP error: no client reads it as messages
}

// policySession is the session policy sees for a GET or DELETE of r on
// session id ("" for none): the client's, a virtual session's id when r is
// an inner request of one, as for its POSTs (callContext), as
// telemetry.SessionRef records it. In the inner
// session, which had read nothing, the closed test let the client's
// headers through to an upstream the client's session had closed
// (TestAttackVirtualGETOutsideSession).
func policySession(r *http.Request, id string) string {
	if v, _ := r.Context().Value(virtualSessionKey{}).(string); v != "" {
		return telemetry.SessionRef(v)
	}
	return telemetry.SessionRef(id)
}

// requireSession resolves the request's session. A missing header is
// fine (stateless servers): sess is nil, and agent is who the request
// names (its principal or agent header), "" for none; an unknown id, or
// another agent's, is a 404.
func (g *Gateway) requireSession(w http.ResponseWriter, r *http.Request, rt *route) (sess *session, agent string, ok bool) {
	c, err := g.ident.identify(r, nil)
	if err != nil {
		writeJSONRPCError(w, http.StatusBadRequest, nil, err)
		return nil, "", false
	}
	sid := r.Header.Get(hdrSession)
	if sid == "" {
		return nil, c.principal().agent, true
	}
	sess, err = g.session(r.Context(), sid, rt, c, clientAddr(r))
	if sess == nil {
		writeSessionError(w, nil, err)
		return nil, "", false
	}
	return sess, "", true
}

// delete ends a session here and upstream.
func (g *Gateway) delete(w http.ResponseWriter, r *http.Request, rt *route) {
	sess, _, ok := g.requireSession(w, r, rt)
	if !ok {
		return
	}
	if sess == nil {
		writeJSONRPCError(w, http.StatusBadRequest, nil, &intercept.WireError{Code: intercept.CodeInvalidRequest, Message: "DELETE needs an " + hdrSession + " header"})
		return
	}
	// Its calls held for approval go with it, here and on every other
	// replica (heldshare.go), whatever the upstream answers: an
	// operator's later approval must not send a call of a session its
	// client ended. First, so that a DELETE the shared store cannot take
	// ends nothing. A virtual session's inner session has its calls held
	// on other replicas recorded under the virtual session, which its
	// aggregator ended so before.
	_, inner := r.Context().Value(virtualSessionKey{}).(string)
	if store := g.callHolds(sess); store != nil && !inner && sess.elicitForm && g.opts.Approver != nil {
		if err := g.endShared(context.WithoutCancel(r.Context()), store, sess.id, sess.owner.agent); err != nil {
			g.log.Warn("session end refused: the session's shared store did not cancel its calls held on other replicas", "err", err)
			writeJSONRPCError(w, http.StatusServiceUnavailable, nil, errEndUnshared)
			return
		}
	}
	sess.held.cancelAll(g.opts.Approver, sess.owner.agent)
	if rt.url == nil {
		if g.sealer != nil {
			g.sealer.end(sess.id) // its id must not bring it back (adopt): it is this replica's alone
		}
		g.sessions.remove(sess.id)
		g.endSession(sess)
		w.WriteHeader(http.StatusNoContent)
		return
	}
	cc := intercept.CallContext{Upstream: rt.up.Name, Target: rt.up.target(), SessionID: policySession(r, sess.id), Principal: intercept.PrincipalFrom(r.Context())}
	cc.Agent, cc.ProtocolVersion = sess.info()
	out, err := g.upstreamRequest(r.Context(), r, rt, sess, g.ic.Closed(r.Context(), cc), nil)
	var resp *http.Response
	if err == nil {
		resp, err = g.do(rt, out)
	}
	if err == nil {
		defer resp.Body.Close()
	}
	// The gateway's session is the gateway's to end, whatever the
	// upstream does with its own: one that refuses the DELETE (405, as
	// the specification lets it) or cannot be reached keeps its session
	// until it idles out there, but the gateway's id, which its client
	// holds as a credential, ends here and, on any replica
	// (sessionends.go), is refused from now on. Before, a 405 kept the
	// gateway's session too: the client's logout left its id working
	// (TestAttackDeleteRefusedUpstreamEndsSession). A virtual session's
	// inner one is only ever named by its aggregator, whose session's end
	// was recorded so.
	if err := g.recordEnd(r.Context(), sess.id, sess.upstreamID != "" && sess.bridge == nil && !inner); err != nil {
		g.log.Warn("session end refused: the shared store did not record it for the other replicas", "err", err)
		writeJSONRPCError(w, http.StatusServiceUnavailable, nil, errEndUnrecorded)
		return
	}
	g.sessions.remove(sess.id)
	if g.opts.OnSessionEnd != nil {
		g.opts.OnSessionEnd(sess.ref())
	}
	switch {
	case err != nil:
		g.log.Warn("session ended; its upstream session was not: the DELETE did not reach the upstream", "upstream", rt.up.Name, "err", err)
		if sess.upstreamID != "" {
			g.ends.add(rt, sess.upstreamID) // asked again, paced
		}
		w.WriteHeader(http.StatusNoContent)
	case resp.StatusCode == http.StatusMethodNotAllowed:
		// The refusal is the upstream's, of its own session; the
		// client's session, with the gateway, has ended.
		g.log.Debug("session ended; its upstream refused to end its own", "upstream", rt.up.Name)
		w.WriteHeader(http.StatusNoContent)
	default:
		if resp.StatusCode >= 500 && sess.upstreamID != "" {
			// The upstream could not take it just then (a proxy in
			// front of a down server): asked again, as when the DELETE
			// did not reach it (TestAttackDeleteUpstreamUnavailableRetried).
			g.log.Warn("session ended; its upstream session was not: the upstream failed the DELETE", "upstream", rt.up.Name, "status", resp.StatusCode)
			g.ends.add(rt, sess.upstreamID)
		}
		copyHeaders(w.Header(), resp.Header, nil)
		w.WriteHeader(resp.StatusCode)
		_, _ = io.Copy(w, resp.Body)
	}
}
