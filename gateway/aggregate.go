package gateway

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	lru "github.com/hashicorp/golang-lru/v2"

	"github.com/sluicehq/sluice/gateway/transport"
	"github.com/sluicehq/sluice/intercept"
	"github.com/sluicehq/sluice/telemetry"
)

// A VirtualServer is one MCP endpoint in front of several upstreams: it
// merges their tools, prompts, resources and resource templates and sends
// each call on to the upstream that offers it. The call goes through that
// upstream's own route in this gateway, so policy, classification,
// inventory and audit see the real upstream and the real tool name: a rule
// for github's create_issue never matches another upstream's create_issue
// whatever name the agent sees.
//
// The unnamed virtual server is served at /mcp, a named one at /mcp/{name}.
// It speaks the 2025-era Streamable HTTP transport (sessions, JSON or SSE
// responses, a GET stream that carries list_changed, requests from
// upstreams to the client relayed under ids of its own) and 2026-07-28
// when every upstream does.
type VirtualServer struct {
	// Name is the route segment; "" serves the virtual server at /mcp.
	Name string `yaml:"name"`
	// Upstreams are merged in this order; empty means every upstream in
	// the order of the config. Order decides who keeps a bare name in
	// on_collision mode, so add upstreams at the end to keep names stable.
	Upstreams []string `yaml:"upstreams"`
	// Naming says what the agent sees as a tool's (and prompt's) name.
	Naming NamingMode `yaml:"naming"`
	// Renames give a tool or prompt an explicit name:
	// "upstream/tool" -> name. They win over Naming.
	Renames map[string]string `yaml:"renames"`
}

// NamingMode is how a virtual server names what its upstreams offer.
type NamingMode string

const (
	// NamingOnCollision keeps a name as it is unless an upstream earlier
	// in the list already uses it; the later one gets "{upstream}_{name}".
	// The default.
	NamingOnCollision NamingMode = "on_collision"
	// NamingPrefix names everything "{upstream}_{name}".
	NamingPrefix NamingMode = "prefix"
	// NamingNever keeps every name as it is; a name an earlier upstream
	// already uses is left out of the list (with an event) unless Renames
	// gives it another.
	NamingNever NamingMode = "never"
)

// validToolName is what MCP clients accept as a tool name.
var validToolName = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

// Check validates v against the configured upstreams and fills in its
// defaults (every upstream, on_collision).
func (v *VirtualServer) Check(upstreams []Upstream) error {
	if v.Name != "" && !validName.MatchString(v.Name) {
		return fmt.Errorf("virtual server name %q: use letters, digits, '-', '_' and '.'", v.Name)
	}
	switch v.Naming {
	case "":
		v.Naming = NamingOnCollision
	case NamingOnCollision, NamingPrefix, NamingNever:
	default:
		return fmt.Errorf("virtual server %q: naming %q: want prefix, on_collision or never", v.Name, v.Naming)
	}
	known := map[string]bool{}
	for _, u := range upstreams {
		known[u.Name] = true
		if u.Name == v.Name {
			return fmt.Errorf("virtual server %q: an upstream has that name", v.Name)
		}
	}
	if len(v.Upstreams) == 0 {
		for _, u := range upstreams {
			v.Upstreams = append(v.Upstreams, u.Name)
		}
	}
	seen := map[string]bool{}
	for _, u := range v.Upstreams {
		if !known[u] {
			return fmt.Errorf("virtual server %q: no upstream named %q", v.Name, u)
		}
		if seen[u] {
			return fmt.Errorf("virtual server %q: upstream %q listed twice", v.Name, u)
		}
		seen[u] = true
	}
	for from, to := range v.Renames {
		u, _, ok := strings.Cut(from, "/")
		if !ok || !seen[u] {
			return fmt.Errorf("virtual server %q: rename %q: want \"upstream/tool\" naming one of its upstreams", v.Name, from)
		}
		if !validToolName.MatchString(to) {
			return fmt.Errorf("virtual server %q: rename %q to %q: names must match %s", v.Name, from, to, validToolName)
		}
	}
	return nil
}

// safeName turns s into a valid tool name: other characters become '_',
// and a name longer than 64 keeps its first 55 bytes and a hash of the
// whole, so two long names stay apart.
func safeName(s string) string {
	b := []byte(s)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			b[i] = '_'
		}
	}
	if len(b) == 0 {
		return "_"
	}
	if len(b) > 64 {
		sum := sha256.Sum256([]byte(s))
		b = append(b[:55:55], '_')
		b = append(b, hex.EncodeToString(sum[:4])...)
	}
	return string(b)
}

// offered is one tool or prompt of one upstream. One without raw holds
// a name of an upstream that did not answer the list (known): not listed,
// it is still the upstream's, so no other upstream's tool takes it; one
// without a name either stands for every name of an upstream never
// listed (unknown).
type offered struct {
	upstream, name string
	raw            jsontext.Value
}

// target is where a name the agent sees leads.
type target struct{ upstream, name string }

// assignNames names what the upstreams offer, in their order. It returns
// the emitted names (in order) with where each leads, and what was left
// out and why.
func (v *VirtualServer) assignNames(items []offered) (names []string, to map[string]target, dropped []string) {
	return v.assignHeld(items, nil)
}

// assignHeld is assignNames where held says which tool a bare name was
// given to before (ok false: none): it stays that tool's while it is
// offered, whatever upstream earlier in the order offers one of the same
// name since, which gets its prefixed name (or, with naming never, none).
// Otherwise an upstream adding a tool of another's name took the name,
// and the calls clients made by it, from the tool they had listed.
func (v *VirtualServer) assignHeld(items []offered, held func(bare string) (target, bool)) (names []string, to map[string]target, dropped []string) {
	to = map[string]target{}
	take := func(name string, it offered) bool {
		if _, taken := to[name]; taken {
			return false
		}
		to[name] = target{it.upstream, it.name}
		names = append(names, name)
		return true
	}
	drop := func(it offered, why string, args ...any) {
		if it.raw != nil { // a held name is nobody's news
			dropped = append(dropped, fmt.Sprintf("%s/%s: "+why, append([]any{it.upstream, it.name}, args...)...))
		}
	}
	// Renames first, so that a rename always gets its name.
	var rest []offered
	for _, it := range items {
		if r, ok := v.Renames[it.upstream+"/"+it.name]; ok && it.name != "" {
			if !take(r, it) {
				drop(it, "renamed to %q, which another rename took", r)
			}
			continue
		}
		rest = append(rest, it)
	}
	// unknown is an earlier upstream that did not answer and whose names
	// are not known: any bare name may be one of its.
	var unknown string
	// prefixes are the upstreams' own prefixes ("github_"): in
	// on_collision, a bare name that starts with another upstream's is
	// not kept. Else an upstream listed first could list
	// "github_create_issue" (and "create_issue"), take both names
	// github's create_issue could have, and have the agent's calls meant
	// for github — with what they carry — come to it.
	prefixes := map[string]bool{}
	for _, it := range items {
		prefixes[safeName(it.upstream)+"_"] = true
	}
	squats := func(bare, upstream string) bool {
		own := safeName(upstream) + "_"
		for p := range prefixes {
			if p != own && strings.HasPrefix(bare, p) {
				return true
			}
		}
		return false
	}
	if held != nil && v.Naming != NamingPrefix {
		kept := rest[:0:0]
		for _, it := range rest {
			bare := safeName(it.name)
			if h, ok := held(bare); ok && it.name != "" && h == (target{it.upstream, it.name}) && !squats(bare, it.upstream) && take(bare, it) {
				continue
			}
			kept = append(kept, it)
		}
		rest = kept
	}
	for _, it := range rest {
		if it.raw == nil && it.name == "" {
			unknown = cmp.Or(unknown, it.upstream)
			continue
		}
		bare, prefixed := safeName(it.name), safeName(it.upstream+"_"+it.name)
		switch v.Naming {
		case NamingPrefix:
			if !take(prefixed, it) {
				drop(it, "%q is taken", prefixed)
			}
		case NamingNever:
			if unknown != "" {
				drop(it, "%q may be a name of %s, which did not answer", bare, unknown)
			} else if !take(bare, it) {
				drop(it, "%q is taken by %s (give it a rename)", bare, to[bare].upstream)
			}
		default:
			if (unknown != "" || squats(bare, it.upstream) || !take(bare, it)) && !take(prefixed, it) {
				drop(it, "%q and %q are taken", bare, prefixed)
			}
		}
	}
	return names, to, dropped
}

// aggregator serves one virtual server.
type aggregator struct {
	g   *Gateway
	vs  VirtualServer
	sse *transport.SSEServer // its /sse endpoint (aggregate_conn.go)
	// listTimeout bounds each upstream's part of a merged list: a stalled
	// upstream drops out of that list instead of holding it up.
	listTimeout time.Duration

	mu       sync.Mutex
	sessions map[string]*aggSession
	ids      atomic.Int64

	// known is what each upstream last listed here, by principal, method
	// and upstream (knownKey): the names an upstream that does not answer
	// keeps (list).
	known *lru.Cache[string, []string]
	// held is the tool each bare name was last given to, by principal,
	// agent header (heldOwner) and method, as the last listing gave them
	// (assignHeld): a
	// listing replaces its principal's names whole, so that no number of
	// names an upstream lists pushes another's out.
	held *lru.Cache[string, map[string]target]
	// patterns is the pattern of each resource template last compiled
	// (templateRegexp), by its text, for every session's matching.
	patterns *lru.Cache[string, *regexp.Regexp]

	// eraMu guards the cached answer of legacyEra.
	eraMu     sync.Mutex
	eraAt     time.Time
	eraLegacy bool

	// caps is what each upstream last declared of tasks (aggregate_tasks.go).
	capsMu sync.Mutex
	caps   map[string]upstreamCaps
}

type aggSession struct {
	id      string
	owner   string    // the authenticated principal, "" without one
	who     principal // who opened it (identity.go): fixed for its whole life, as a route session's
	client  string    // the client's address (clientAddr), for the per-client limit
	version string
	init    jsontext.Value // the client's initialize params
	last    atomic.Int64   // unix nanos (aggregator.now) of the last request, or of when the last served ended
	// serving counts the requests of the session being served (post): a
	// session with one in flight is not idle.
	serving atomic.Int64

	// modern: a 2026-07-28 request, served without a session; meta is
	// its _meta (version, client info, capabilities), sent on with every
	// inner request.
	modern bool
	meta   jsontext.Value

	mu        sync.Mutex
	inner     map[string]*innerSession
	tools     map[string]target // nil until listed
	prompts   map[string]target
	resources map[string]string           // uri -> upstream
	templates map[string][]*regexp.Regexp // upstream -> the URIs of the resource templates it listed; nil until listed
	// templatesFailed: an upstream's listing of templates failed (its
	// last are kept, if any): a URI no template fits asks again.
	templatesFailed bool
	notify          chan []byte // to the GET stream, if one is open
	closed          bool
	asks            map[string]pendingAsk // relayed requests awaiting the client's answer
	asked           uint64
	// gone are the latest relayed requests whose exchange ended before
	// the client answered, at most maxGoneAsks, oldest first: a late
	// answer to one is taken and dropped (the question was withdrawn, or
	// its call ended), not refused as forged.
	gone  []string
	calls map[string]pendingCall // inner calls in flight, by the client's request id
}

type innerSession struct {
	id, version string
}

func newAggregator(g *Gateway, vs VirtualServer) *aggregator {
	a := &aggregator{g: g, vs: vs, sessions: map[string]*aggSession{}, listTimeout: 10 * time.Second}
	a.known, _ = lru.New[string, []string](maxKnownLists)
	a.patterns, _ = lru.New[string, *regexp.Regexp](maxTemplates)
	a.held, _ = lru.New[string, map[string]target](maxKnownLists)
	a.sse = a.sseServer()
	return a
}

func (a *aggregator) path() string {
	if a.vs.Name == "" {
		return "/mcp"
	}
	return "/mcp/" + a.vs.Name
}

func (a *aggregator) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch r.Method {
	case http.MethodPost:
		a.post(w, r)
	case http.MethodGet:
		a.get(w, r)
	case http.MethodDelete:
		if s := a.session(w, r, nil); s != nil {
			if err := a.endShared(r, s); err != nil {
				a.g.log.Warn("session end refused: the session's shared store did not cancel its calls held on other replicas", "err", err)
				writeJSONRPCError(w, http.StatusServiceUnavailable, nil, errEndUnshared)
				return
			}
			// Its id must not bring it back, on any replica
			// (sessionends.go).
			if err := a.g.recordEnd(r.Context(), s.id, true); err != nil {
				a.g.log.Warn("session end refused: the shared store did not record it for the other replicas", "err", err)
				writeJSONRPCError(w, http.StatusServiceUnavailable, nil, errEndUnrecorded)
				return
			}
			a.end(r, s)
			w.WriteHeader(http.StatusNoContent)
		}
	default:
		w.Header().Set("Allow", "GET, POST, DELETE")
		writeJSONRPCError(w, http.StatusMethodNotAllowed, nil, &intercept.WireError{Code: intercept.CodeInvalidRequest,
			Message: "method " + r.Method + " is not allowed on an MCP endpoint"})
	}
}

func owner(r *http.Request) string {
	if p := intercept.PrincipalFrom(r.Context()); p != nil {
		return p.ID
	}
	return ""
}

// session finds the request's session, answering for it when there is
// none: a session is never valid for another principal, nor for another
// agent header value or client name than the one that opened it, as a
// route's (identity.go). msgs are what the request carries, if anything.
func (a *aggregator) session(w http.ResponseWriter, r *http.Request, msgs []*intercept.Message) *aggSession {
	c, err := a.g.ident.identify(r, msgs)
	if err != nil {
		writeJSONRPCError(w, http.StatusBadRequest, nil, err)
		return nil
	}
	id := r.Header.Get("Mcp-Session-Id")
	if id == "" {
		writeJSONRPCError(w, http.StatusBadRequest, nil, &intercept.WireError{Code: intercept.CodeInvalidRequest,
			Message: "Mcp-Session-Id is required after initialize on " + a.path()})
		return nil
	}
	if a.g.sealer != nil && a.g.sealer.expired(id) {
		a.mu.Lock()
		s := a.sessions[id]
		delete(a.sessions, id)
		a.mu.Unlock()
		if s != nil {
			s.close()
			if a.g.opts.OnSessionEnd != nil {
				a.g.opts.OnSessionEnd(telemetry.SessionRef(id)) // what policy kept under it: no DELETE can come now
			}
		}
		writeSessionGone(w, a.g.sealer.errSessionExpired())
		return nil
	}
	own := owner(r)
	a.mu.Lock()
	s := a.sessions[id]
	if s != nil && s.owner == own && s.who.admits(c) {
		// Under a.mu: reapLocked, which holds it, either sees the
		// session used now or has removed it, and it is not found.
		s.last.Store(a.now())
	}
	a.mu.Unlock()
	adopted := false
	if s == nil {
		s, err = a.adopt(r, id) // sealed by another replica
		adopted = true
	}
	if s != nil && !adopted && s.owner == own && s.who.admits(c) && a.g.sealer != nil {
		// Its client may have ended it through another replica
		// (sessionends.go).
		var ended bool
		if ended, err = a.g.ended(r.Context(), id, a.g.othersServe()); ended {
			a.drop(s)
		}
		if ended || err != nil {
			s = nil
		}
	}
	if err != nil {
		writeSessionError(w, nil, err)
		return nil
	}
	if s == nil || s.owner != own || !s.who.admits(c) {
		writeSessionGone(w, errors.New("unknown or expired session: start a new session with initialize"))
		return nil
	}
	return s
}

// drop lets go of s, ended through another replica, if it is here.
func (a *aggregator) drop(s *aggSession) {
	a.mu.Lock()
	if a.sessions[s.id] == s {
		delete(a.sessions, s.id)
	}
	a.mu.Unlock()
	s.close()
}

// now is the sessions' clock, in unix nanoseconds.
func (a *aggregator) now() int64 { return a.g.sessions.now().UnixNano() }

// fullLocked applies the gateway's session limits to s, a session about
// to be entered (opened or adopted), so that one agent or one address
// cannot take every session of the virtual server: it returns the HTTP
// status and why s may not be, or 0. a.mu is held.
func (a *aggregator) fullLocked(s *aggSession) (int, string) {
	var byOwner, byClient int
	for _, o := range a.sessions {
		if s.who.agent != "" && o.who.agent == s.who.agent {
			byOwner++
		}
		if o.client == s.client {
			byClient++
		}
	}
	switch {
	case len(a.sessions) >= a.g.opts.maxSessions():
		return http.StatusServiceUnavailable, fmt.Sprintf("%d sessions, the limit (max_sessions)", len(a.sessions))
	case byOwner >= a.g.opts.maxSessionsPerAgent():
		return http.StatusTooManyRequests, fmt.Sprintf("agent %q has %d sessions, the limit (max_sessions_per_agent)", s.who.agent, byOwner)
	case byClient >= a.g.opts.maxSessionsPerClient():
		return http.StatusTooManyRequests, fmt.Sprintf("this address has %d sessions, the limit (max_sessions_per_client)", byClient)
	}
	return 0, ""
}

type rpcRequest struct {
	JSONRPC string         `json:"jsonrpc"`
	ID      jsontext.Value `json:"id,omitzero"`
	Method  string         `json:"method"`
	Params  jsontext.Value `json:"params,omitzero"`
}

type rpcResponse struct {
	JSONRPC string         `json:"jsonrpc"`
	ID      jsontext.Value `json:"id,omitzero"`
	Method  string         `json:"method,omitzero"`
	Result  jsontext.Value `json:"result,omitzero"`
	Error   jsontext.Value `json:"error,omitzero"`
}

func (a *aggregator) post(w http.ResponseWriter, r *http.Request) {
	// Bounded as a route's body is: limitBodies refuses a declared length
	// past max_body_bytes, but a chunked body is bounded there only by
	// the budget all requests share.
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, a.g.opts.maxBody()))
	if err != nil {
		if le, ok := asLimitError(err); ok {
			writeLimitError(w, nil, le)
			return
		}
		writeJSONRPCError(w, http.StatusRequestEntityTooLarge, nil, &intercept.WireError{Code: intercept.CodeInvalidRequest, Message: "request body: " + err.Error()})
		return
	}
	var req rpcRequest
	if err := json.Unmarshal(body, &req); err == nil && req.JSONRPC == "2.0" && req.Method == "" && len(req.ID) > 0 {
		// The client's answer to a request an upstream sent it.
		var resp rpcResponse
		if json.Unmarshal(body, &resp) == nil && (len(resp.Result) > 0) != (len(resp.Error) > 0) {
			a.answer(w, r, resp)
			return
		}
	}
	if err := json.Unmarshal(body, &req); err != nil || req.JSONRPC != "2.0" || req.Method == "" {
		msg := "not a JSON-RPC 2.0 request"
		if bytes.HasPrefix(bytes.TrimSpace(body), []byte("[")) {
			msg = "batches are not accepted on " + a.path()
		}
		writeJSONRPCError(w, http.StatusBadRequest, nil, &intercept.WireError{Code: intercept.CodeInvalidRequest, Message: msg})
		return
	}
	var msgs []*intercept.Message
	if m, err := intercept.DecodeMessage(body); err == nil {
		msgs = []*intercept.Message{m}
	}
	if req.Method == "initialize" {
		a.initialize(w, r, req, msgs)
		return
	}
	var s *aggSession
	if meta := intercept.Member(req.Params, "_meta"); r.Header.Get("Mcp-Session-Id") == "" &&
		(isModern(r.Header.Get(hdrVersion)) || isModern(intercept.StringMember(meta, "io.modelcontextprotocol/protocolVersion"))) {
		// MCP 2026-07-28: every request stands alone.
		if err := checkModernHeaders(r, req, true); err != nil {
			writeJSONRPCError(w, http.StatusBadRequest, req.ID, err)
			return
		}
		// Identified as a route identifies it (the agent header once, or
		// present when required): its inner requests carry the header's
		// first value only, which the route could not tell from the one
		// a proxy in front appended.
		if _, err := a.g.ident.identify(r, msgs); err != nil {
			writeJSONRPCError(w, http.StatusBadRequest, req.ID, err)
			return
		}
		s = &aggSession{owner: owner(r), version: modernVersion, modern: true, meta: meta, inner: map[string]*innerSession{}}
	} else if s = a.session(w, r, msgs); s == nil {
		return
	} else if err := s.continues(r, req); err != nil {
		// As a route's session (post, classify): before, a virtual
		// session took a request saying 2026-07-28, or whose Mcp-Method
		// and Mcp-Name said another method or tool than its body, as any
		// other (TestAttackVirtualSessionMixedEra).
		writeJSONRPCError(w, http.StatusBadRequest, req.ID, err)
		return
	}
	if s.id != "" {
		// In flight until answered, or its client or the upstream gave
		// up: the session is not idle meanwhile, and its idle time
		// counts from the end.
		s.serving.Add(1)
		defer func() {
			s.last.Store(a.now())
			s.serving.Add(-1) // after: reapLocked, seeing none, sees the end
		}()
		r = s.policySees(r)
	}
	// The task the message says it belongs to, by the id the client was
	// shown: each inner message carries its upstream's own (roundTrip).
	rel, rerr := a.relatedTaskIn(r, s, intercept.Member(req.Params, "_meta"), msgs)
	if rerr != nil && len(req.ID) == 0 {
		writeJSONRPCError(w, http.StatusBadRequest, nil, rerr)
		return
	}
	r = withRelatedTask(r, rel)
	if len(req.ID) == 0 { // a notification: nothing to answer
		switch {
		case s.modern:
		case req.Method == "notifications/roots/list_changed":
			a.broadcast(r, s, body)
		case req.Method == "notifications/cancelled":
			if err := a.cancel(r, s, req.Params); err != nil {
				a.g.log.Warn("cancellation refused: the session's shared store did not say whether another replica holds the call", "err", err)
				writeJSONRPCError(w, http.StatusServiceUnavailable, nil, errCancelUnchecked)
				return
			}
		}
		w.WriteHeader(http.StatusAccepted)
		return
	}
	if s.modern && req.Method == methodListen && rerr == nil {
		a.listen(w, r, s, req, msgs)
		return
	}
	if namedMethod(req.Method) && !s.modern {
		// Its inner call is registered under this id, for the client's
		// notifications/cancelled.
		r = r.WithContext(context.WithValue(r.Context(), outerIDKey{}, string(req.ID)))
	}
	var out *outStream
	if namedMethod(req.Method) && strings.Contains(r.Header.Get("Accept"), "text/event-stream") {
		out = &outStream{w: w}
		ctx := r.Context()
		if s.id != "" {
			// Ended through another replica, the stream carries nothing
			// more, and the call is cancelled (untilEnded).
			var stop func()
			ctx, stop, out.live = a.g.untilEnded(ctx, s.id)
			defer stop()
		}
		r = r.WithContext(context.WithValue(ctx, relayKey{}, out.send))
	}
	var result jsontext.Value
	derr := rerr
	if rerr == nil {
		result, derr = a.dispatch(r, s, req)
	}
	var b []byte
	switch ue, isUp := errors.AsType[*routeError](derr); {
	case derr == nil:
		b, err = json.Marshal(rpcResponse{JSONRPC: "2.0", ID: req.ID, Result: result})
	case isUp: // the upstream route's error (a policy denial among them), as it was
		b, err = json.Marshal(rpcResponse{JSONRPC: "2.0", ID: req.ID, Error: ue.raw})
	case isHeaderMismatch(derr): // refused as the route refuses it
		writeJSONRPCError(w, http.StatusBadRequest, req.ID, derr)
		return
	default:
		b = intercept.ErrorResponse(req.ID, derr)
	}
	if err != nil {
		writeJSONRPCError(w, http.StatusInternalServerError, req.ID, &intercept.WireError{Code: intercept.CodeInternalError, Message: err.Error()})
		return
	}
	if out != nil && out.started { // notifications went first: the answer ends the stream
		out.send(b)
		return
	}
	if out != nil && out.cut() {
		writeSessionGone(w, errEndedElsewhere)
		return
	}
	writeJSON(w, http.StatusOK, b)
}

// toGET writes b to the session's GET stream, if one is open and not too
// far behind (then the sender hears so).
func (s *aggSession) toGET(b []byte) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.notify == nil {
		return false
	}
	select {
	case s.notify <- b:
		return true
	default:
		return false
	}
}

// relayKey holds, in an inner call's context, where the notifications
// about that call go.
type relayKey struct{}

// outStream is a client's SSE answer, started by the first notification.
type outStream struct {
	mu      sync.Mutex
	w       http.ResponseWriter
	started bool
	// live, if set, is asked before each message: an error ends the
	// stream (ended), the message unwritten (untilEnded).
	live  func() error
	ended bool
}

// cut reports whether o ended for its session's end.
func (o *outStream) cut() bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.ended
}

func (o *outStream) send(data []byte) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.ended {
		return
	}
	if o.live != nil && o.live() != nil {
		o.ended = true
		return
	}
	if !o.started {
		o.w.Header().Set("Content-Type", "text/event-stream")
		o.w.Header().Set("Cache-Control", "no-cache")
		o.w.WriteHeader(http.StatusOK)
		o.started = true
	}
	fmt.Fprintf(o.w, "event: message\ndata: %s\n\n", data)
	_ = http.NewResponseController(o.w).Flush()
}

// aggVersions are the versions the virtual server speaks, newest first.
var aggVersions = []string{"2025-11-25", "2025-06-18", "2025-03-26"}

func (a *aggregator) initialize(w http.ResponseWriter, r *http.Request, req rpcRequest, msgs []*intercept.Message) {
	c, err := a.g.ident.identify(r, msgs)
	if err != nil {
		writeJSONRPCError(w, http.StatusBadRequest, req.ID, err)
		return
	}
	var p struct {
		ProtocolVersion string `json:"protocolVersion"`
	}
	_ = json.Unmarshal(req.Params, &p)
	version := aggVersions[0]
	if slices.Contains(aggVersions, p.ProtocolVersion) {
		version = p.ProtocolVersion
	}
	// The params are kept as a sealed id carries them (sealableInit: past
	// 4 KiB, the version, capabilities and client name), a copy: a slice
	// of the request would hold its whole body for the session's life.
	s := &aggSession{id: newSessionID(), owner: owner(r), who: c.principal(), client: clientAddr(r), version: version, init: bytes.Clone(sealableInit(req.Params)), inner: map[string]*innerSession{}}
	s.last.Store(a.now())
	a.mu.Lock()
	a.reapLocked()
	if status, msg := a.fullLocked(s); status != 0 {
		a.mu.Unlock()
		w.Header().Set("Retry-After", "5")
		writeJSONRPCError(w, status, req.ID, &intercept.WireError{Code: intercept.CodeLimitExceeded, Message: a.path() + ": " + msg})
		return
	}
	a.sessions[s.id] = s
	a.mu.Unlock()
	a.learnCaps(r, s) // whether to declare tasks
	if a.g.sealer != nil {
		// Any replica may serve it: the id carries the session.
		sealed := a.sealSession(r, s)
		a.mu.Lock()
		delete(a.sessions, s.id)
		s.id = sealed
		a.sessions[sealed] = s
		a.mu.Unlock()
	}
	name := "sluice"
	if a.vs.Name != "" {
		name = "sluice/" + a.vs.Name
	}
	caps := map[string]any{
		"tools":     map[string]any{"listChanged": true},
		"prompts":   map[string]any{"listChanged": true},
		"resources": map[string]any{"listChanged": true},
	}
	if t := a.tasksCapability(); t != nil {
		caps["tasks"] = t
	}
	if l := a.loggingCapability(); l != nil {
		caps["logging"] = l
	}
	if e := a.extensionsCapability(); e != nil {
		caps["extensions"] = e
	}
	res, _ := json.Marshal(map[string]any{
		"protocolVersion": version,
		"capabilities":    caps,
		"serverInfo":      map[string]any{"name": name, "version": "1"},
	}, json.Deterministic(true))
	b, _ := json.Marshal(rpcResponse{JSONRPC: "2.0", ID: req.ID, Result: res})
	w.Header().Set("Mcp-Session-Id", s.id)
	writeJSON(w, http.StatusOK, b)
}

// reapLocked ends sessions idle beyond the gateway's session timeout:
// none with a request being served, or a call in flight (calling).
func (a *aggregator) reapLocked() {
	cutoff := a.now() - a.g.opts.idleTimeout().Nanoseconds()
	var ended []string
	for id, s := range a.sessions {
		if s.serving.Load() == 0 && s.last.Load() < cutoff && !s.calling() {
			delete(a.sessions, id)
			s.close()
			ended = append(ended, id)
		}
	}
	// A sealed session may go on through another replica (or this one,
	// adopted again): what policy keeps under it stays.
	if len(ended) > 0 && a.g.sealer == nil && a.g.opts.OnSessionEnd != nil {
		go func() {
			for _, id := range ended {
				a.g.opts.OnSessionEnd(telemetry.SessionRef(id))
			}
		}()
	}
}

// calling reports whether a call of s is in flight (track): a call held
// for its user's approval, which its client waits on and which is decided
// against the session's route memory once approved, keeps s from being
// idle.
func (s *aggSession) calling() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.calls) > 0
}

func (s *aggSession) close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	if s.notify != nil {
		close(s.notify)
		s.notify = nil
	}
}

// endShared cancels the calls of s held for approval on other replicas,
// which record them under the virtual session (heldshare.go): its client
// ends it. err says the shared store could not be asked.
func (a *aggregator) endShared(r *http.Request, s *aggSession) error {
	store, shared := a.g.opts.Exchanges.(CallHolds)
	caps := intercept.Member(s.init, "capabilities")
	if !shared || a.g.sealer == nil || a.g.opts.Approver == nil || (caps != nil && !formElicitation(caps)) {
		return nil // nothing of s is held for its user anywhere
	}
	return a.g.endShared(context.WithoutCancel(r.Context()), store, s.id, s.who.agent)
}

func (a *aggregator) end(r *http.Request, s *aggSession) {
	if a.g.sealer != nil {
		a.g.sealer.end(s.id) // its id must not bring it back (adopt)
	}
	a.mu.Lock()
	delete(a.sessions, s.id)
	a.mu.Unlock()
	s.mu.Lock()
	inner := innerList(s.inner)
	s.mu.Unlock()
	s.close()
	// The inner sessions' DELETEs say whose they are: their calls held on
	// other replicas were recorded under s, and cancelled (endShared).
	r = r.WithContext(context.WithValue(r.Context(), virtualSessionKey{}, s.id))
	for _, in := range inner {
		// Its calls held for approval go with it, whether or not the
		// upstream ends the inner session (one may answer DELETE with
		// 405): they are decided as the virtual session's, whose route
		// memory goes below.
		if is := a.g.sessions.find(in.sess.id); is != nil {
			is.held.cancelAll(a.g.opts.Approver, s.who.agent)
		}
		req := a.innerRequest(r, http.MethodDelete, in.upstream, in.sess, nil)
		a.g.handleMCP(&discard{h: http.Header{}}, req)
	}
	if a.g.opts.OnSessionEnd != nil {
		a.g.opts.OnSessionEnd(telemetry.SessionRef(s.id)) // what policy kept under it (callContext)
	}
}

// virtualSessionKey holds, in an inner request's context, the id of the
// virtual session it serves.
type virtualSessionKey struct{}

// policySees is r with what policy is to see of the inner requests it
// makes: the client's session, not each upstream's inner one (route rules
// of session scope, the classifier's lifecycle), and its agent, also where
// an upstream gave no inner session.
func (s *aggSession) policySees(r *http.Request) *http.Request {
	ctx := context.WithValue(r.Context(), virtualSessionKey{}, s.id)
	return r.WithContext(context.WithValue(ctx, virtualOwnerKey{}, s.who))
}

// virtualOwnerKey holds, in an inner request's context, who the virtual
// session it serves belongs to (a principal): the route decides a request
// that has no inner session (its upstream gave none: a stateless server)
// as that agent, not as the nameless one its messages alone would make it.
type virtualOwnerKey struct{}

type upstreamSession struct {
	upstream string
	sess     *innerSession
}

// innerList is a session's inner sessions by upstream.
func innerList(m map[string]*innerSession) []upstreamSession {
	var out []upstreamSession
	for u, s := range m {
		out = append(out, upstreamSession{u, s})
	}
	return out
}

func (a *aggregator) dispatch(r *http.Request, s *aggSession, req rpcRequest) (jsontext.Value, error) {
	switch req.Method {
	case "ping":
		return jsontext.Value(`{}`), nil
	case "server/discover":
		return a.discoverFor(r, s)
	case "tools/list":
		return a.list(r, s, "tools/list", "tools")
	case "prompts/list":
		return a.list(r, s, "prompts/list", "prompts")
	case "resources/list":
		return a.list(r, s, "resources/list", "resources")
	case "resources/templates/list":
		return a.list(r, s, "resources/templates/list", "resourceTemplates")
	case "tools/call":
		return a.call(r, s, req, "tools/list", func() map[string]target { return s.tools })
	case "prompts/get":
		return a.call(r, s, req, "prompts/list", func() map[string]target { return s.prompts })
	case "resources/read":
		return a.read(r, s, req)
	case "tasks/list":
		return a.list(r, s, "tasks/list", "tasks")
	case "logging/setLevel":
		// Offered as the capability says (initialize): to the upstreams
		// that declare logging, and not at all when none does, as a
		// server without logging answers. A 2026-07-28 client need not
		// have asked server/discover here: what upstreams declare is
		// learnt as it would have been (at most once per eraTTL).
		if s.modern {
			a.legacyEra(r, s)
		}
		offered := false
		for _, u := range a.vs.Upstreams {
			if a.logs(u) {
				offered = true
				_, _ = a.innerCall(r, s, u, req.Method, req.Params)
			}
		}
		if offered {
			return jsontext.Value(`{}`), nil
		}
	}
	if intercept.TaskMethod(req.Method) {
		return a.task(r, s, req)
	}
	return nil, &intercept.WireError{Code: intercept.CodeMethodNotFound, Message: fmt.Sprintf("%s does not offer %q on %s", "sluice", req.Method, a.path())}
}

// maxKnownLists bounds the lists an aggregator remembers (aggregator.known).
const maxKnownLists = 10_000

// heldOwner is whom the bare names a listing gives out are held for: the
// principal and, with an agent header, the agent it names, whose
// listings hold the tools policy lets it see (hide_denied_tools). Keyed
// by the principal alone, one agent's listing, a tool hidden from it,
// gave the name to another upstream's tool for the principal's other
// agents too (TestVirtualHeldNameAgentScoped). A client's own name, which
// it chooses, does not split the principal's record.
func (a *aggregator) heldOwner(r *http.Request, s *aggSession) string {
	header := s.who.header
	if s.modern {
		c, _ := a.g.ident.identify(r, nil)
		header = c.header
	}
	return s.owner + "\x00" + header
}

func knownKey(owner, method, upstream string) string {
	return owner + "\x00" + method + "\x00" + upstream
}

// list merges one list method over the upstreams, following each one's
// cursors. An upstream that fails drops out of the answer with an event,
// but keeps its names: the tools and prompts it last listed here for this
// principal are not listed and still lead to it (a call gets its error),
// and its resources' URIs too; one never listed here keeps every bare
// name. Otherwise a later upstream's tool of the same name would take it,
// and a call meant for the one that failed would go to another server.
func (a *aggregator) list(r *http.Request, s *aggSession, method, member string) (jsontext.Value, error) {
	var items []offered
	uris := map[string]string{}
	templates := map[string][]*regexp.Regexp{}
	nt := 0 // templates matched, of every upstream
	templatesFailed := false
	for _, u := range a.vs.Upstreams {
		ctx, cancel := context.WithTimeout(r.Context(), a.listTimeout)
		r := r.WithContext(ctx)
		if member == "tasks" {
			if !s.modern {
				_, _ = a.inner(r, s, u) // learns what it declares
			}
			if !a.listsTasks(u) {
				cancel()
				continue
			}
		}
		var cursor string
		var listed []string // the names (URIs) u listed
		failed := false
		notFound := false // u answered that it serves no such method
		for page := 0; ; page++ {
			params := jsontext.Value(`{}`)
			if cursor != "" {
				params, _ = json.Marshal(map[string]string{"cursor": cursor})
			}
			res, err := a.innerCall(r, s, u, method, params)
			if err != nil {
				a.dropped(u, method, err)
				failed, notFound = true, methodNotFound(err)
				break
			}
			var pageRes map[string]jsontext.Value
			if err := json.Unmarshal(res, &pageRes); err != nil {
				a.dropped(u, method, err)
				failed = true
				break
			}
			var list []jsontext.Value
			_ = json.Unmarshal(pageRes[member], &list)
			for _, it := range list {
				var head struct {
					Name        string `json:"name"`
					URI         string `json:"uri"`
					URITemplate string `json:"uriTemplate"`
				}
				_ = json.Unmarshal(it, &head)
				switch member {
				case "tools", "prompts":
					if head.Name != "" {
						items = append(items, offered{u, head.Name, it})
						listed = append(listed, head.Name)
					}
				case "resources":
					listed = append(listed, head.URI)
					if _, dup := uris[head.URI]; !dup {
						uris[head.URI] = u
						items = append(items, offered{u, head.URI, it})
					}
				case "tasks": // the route kept only the caller's
					items = append(items, offered{u, "", withTaskID(u, it)})
				case "resourceTemplates":
					if nt++; nt == maxTemplates+1 {
						a.dropped(u, method, fmt.Errorf("more than %d resource templates: the rest are listed, but no URI is matched to them", maxTemplates))
					}
					if nt <= maxTemplates {
						if re := a.templatePattern(head.URITemplate); re != nil {
							templates[u] = append(templates[u], re)
						}
					}
					items = append(items, offered{u, head.Name, it})
				default:
					items = append(items, offered{u, head.Name, it})
				}
			}
			if err := json.Unmarshal(pageRes["nextCursor"], &cursor); err != nil || cursor == "" {
				break
			}
			if page >= 100 {
				a.dropped(u, method, errors.New("more than 100 pages; the rest is left out"))
				break
			}
		}
		cancel()
		if member == "resourceTemplates" && failed && !notFound {
			// What it listed before stands; a URI no template fits
			// asks again (holders), as a read tried each before.
			s.mu.Lock()
			if prev, ok := s.templates[u]; ok {
				templates[u] = prev
			}
			s.mu.Unlock()
			templatesFailed = true
		}
		if member == "resourceTemplates" || member == "tasks" {
			continue
		}
		key := knownKey(s.owner, method, u)
		if !failed {
			a.known.Add(key, listed)
			continue
		}
		known, ok := a.known.Get(key)
		if !ok {
			if member != "resources" {
				items = append(items, offered{upstream: u})
			}
			continue
		}
		seen := make(map[string]bool, len(listed))
		for _, n := range listed {
			seen[n] = true
		}
		for _, n := range known {
			switch {
			case seen[n]:
			case member == "resources":
				if _, dup := uris[n]; !dup {
					uris[n] = u
				}
			default:
				items = append(items, offered{upstream: u, name: n})
			}
		}
	}
	var out []jsontext.Value
	switch member {
	case "tools", "prompts":
		// One entry per principal, agent and method, replaced whole: kept
		// name by name in one LRU, an upstream listing more names than
		// it holds pushed the holder of the name it wanted out, and
		// took the name at the next listing
		// (TestAttackVirtualHeldNameFlushed).
		heldKey := a.heldOwner(r, s) + "\x00" + method
		prev, _ := a.held.Get(heldKey)
		names, to, dropped := a.vs.assignHeld(items, func(bare string) (target, bool) { t, ok := prev[bare]; return t, ok })
		now := make(map[string]target, len(names))
		for _, n := range names {
			if t := to[n]; n == safeName(t.name) {
				now[n] = t
			}
		}
		// An upstream that did not answer, its names unknown, keeps
		// what it held until it answers again.
		for _, it := range items {
			if it.raw != nil || it.name != "" {
				continue
			}
			for n, t := range prev {
				if _, taken := to[n]; !taken && t.upstream == it.upstream {
					now[n] = t
				}
			}
		}
		a.held.Add(heldKey, now)
		for _, d := range dropped {
			a.g.log.Warn("virtual server: left out of "+method, "virtual_server", a.vs.Name, "why", d)
			if a.g.opts.OnAggregateDropped != nil {
				a.g.opts.OnAggregateDropped(a.vs.Name, strings.SplitN(d, "/", 2)[0], method+": "+d)
			}
		}
		byTarget := map[target]string{}
		for _, n := range names {
			byTarget[to[n]] = n
		}
		for _, it := range items {
			n, ok := byTarget[target{it.upstream, it.name}]
			if !ok || it.raw == nil {
				continue
			}
			out = append(out, rename(it.raw, n))
		}
		s.mu.Lock()
		if member == "tools" {
			s.tools = to
		} else {
			s.prompts = to
		}
		s.mu.Unlock()
	case "resources":
		for _, it := range items {
			out = append(out, it.raw)
		}
		s.mu.Lock()
		s.resources = uris
		s.mu.Unlock()
	case "resourceTemplates":
		for _, it := range items {
			out = append(out, it.raw)
		}
		s.mu.Lock()
		s.templates, s.templatesFailed = templates, templatesFailed
		s.mu.Unlock()
	default:
		for _, it := range items {
			out = append(out, it.raw)
		}
	}
	if out == nil {
		out = []jsontext.Value{}
	}
	res := map[string]any{member: out}
	if s.modern {
		res["resultType"] = "complete"
		if member != "tasks" {
			cacheHints(res)
		}
	}
	b, err := json.Marshal(res)
	if err != nil {
		return nil, &intercept.WireError{Code: intercept.CodeInternalError, Message: err.Error()}
	}
	return b, nil
}

// rename sets the name member of a tool or prompt.
func rename(raw jsontext.Value, name string) jsontext.Value {
	var m map[string]jsontext.Value
	if json.Unmarshal(raw, &m) != nil {
		return raw
	}
	if n, _ := json.Marshal(name); string(m["name"]) == string(n) {
		return raw
	} else {
		m["name"] = n
	}
	b, err := json.Marshal(m, json.Deterministic(true))
	if err != nil {
		return raw
	}
	return b
}

func (a *aggregator) dropped(upstream, method string, err error) {
	a.g.log.Warn("virtual server: upstream left out of the list", "virtual_server", a.vs.Name, "upstream", upstream, "method", method, "err", err)
	if a.g.opts.OnAggregateDropped != nil {
		a.g.opts.OnAggregateDropped(a.vs.Name, upstream, method+": "+err.Error())
	}
}

// call sends a tools/call or prompts/get to the upstream that offers the
// name, under its own name there.
func (a *aggregator) call(r *http.Request, s *aggSession, req rpcRequest, listMethod string, names func() map[string]target) (jsontext.Value, error) {
	var params map[string]jsontext.Value
	if err := json.Unmarshal(req.Params, &params); err != nil {
		return nil, &intercept.WireError{Code: intercept.CodeInvalidParams, Message: "params: " + err.Error()}
	}
	var name string
	if err := json.Unmarshal(params["name"], &name); err != nil || name == "" {
		return nil, &intercept.WireError{Code: intercept.CodeInvalidParams, Message: "params.name is required"}
	}
	s.mu.Lock()
	m := names()
	s.mu.Unlock()
	if m == nil { // not listed yet in this session
		if _, err := a.list(r, s, listMethod, strings.TrimSuffix(listMethod, "/list")); err != nil {
			return nil, err
		}
		s.mu.Lock()
		m = names()
		s.mu.Unlock()
	}
	t, ok := m[name]
	if !ok {
		return nil, &intercept.WireError{Code: intercept.CodeInvalidParams, Message: fmt.Sprintf("no tool or prompt named %q on %s", name, a.path())}
	}
	if rel := relatedTaskOf(r); rel != nil && rel.upstream != t.upstream {
		return nil, errRelatedUpstream(rel, t.upstream)
	}
	params["name"], _ = json.Marshal(t.name)
	b, err := json.Marshal(params, json.Deterministic(true))
	if err != nil {
		return nil, &intercept.WireError{Code: intercept.CodeInternalError, Message: err.Error()}
	}
	if s.modern && req.Method == "tools/call" {
		// The client's Mcp-Param-* headers are checked against the
		// arguments, as a route checks them (classify), whatever the
		// upstream's transport: what sits in front of the gateway acted
		// on them, and the inner request carries its own, written from
		// the body (an HTTP upstream's) or none (a stdio one's).
		m, err := intercept.DecodeMessage(jsontext.Value(`{"jsonrpc":"2.0","id":0,"method":"tools/call","params":` + string(b) + `}`))
		if err != nil {
			return nil, &intercept.WireError{Code: intercept.CodeInvalidParams, Message: err.Error()}
		}
		if err := a.g.checkParamHeaders(r.Header, t.upstream, m); err != nil {
			return nil, err
		}
	}
	res, err := a.innerCall(r, s, t.upstream, req.Method, b)
	if _, ok := errors.AsType[*routeError](err); ok {
		return nil, err
	}
	if err != nil {
		return nil, &intercept.WireError{Code: intercept.CodeInternalError, Message: fmt.Sprintf("upstream %q: %v", t.upstream, err)}
	}
	return taskIDsOut(t.upstream, res), nil // a task handle names its upstream
}

func (a *aggregator) read(r *http.Request, s *aggSession, req rpcRequest) (jsontext.Value, error) {
	var p struct {
		URI string `json:"uri"`
	}
	if err := json.Unmarshal(req.Params, &p); err != nil || p.URI == "" {
		return nil, &intercept.WireError{Code: intercept.CodeInvalidParams, Message: "params.uri is required"}
	}
	order, err := a.holders(r, s, p.URI)
	if err != nil {
		return nil, err
	}
	if len(order) == 0 {
		return nil, &intercept.WireError{Code: intercept.CodeInvalidParams,
			Message: fmt.Sprintf("no upstream of %s lists resource %q or a resource template it fits (the first %d resource templates are matched)", a.path(), p.URI, maxTemplates)}
	}
	// A URI made from templates goes to each upstream whose template it
	// fits in turn until one has it.
	var last error
	for _, u := range order {
		res, err := a.innerCall(r, s, u, req.Method, req.Params)
		if err == nil {
			return res, nil
		}
		if ue, ok := errors.AsType[*routeError](err); ok && decided(ue.raw) {
			// The gateway refused the read on this upstream (denied,
			// rate_limited, held): that is the answer, not a cue to try
			// the next one, which would route around the refusal.
			return nil, err
		}
		last = err
	}
	if _, ok := errors.AsType[*routeError](last); ok {
		return nil, last
	}
	return nil, &intercept.WireError{Code: intercept.CodeInvalidParams, Message: fmt.Sprintf("no upstream of %s has resource %q: %v", a.path(), p.URI, last)}
}

// holders returns the upstreams a read of uri, or a subscription to it,
// goes to: the one that listed it; else, in their order, those that list
// a resource template it fits. None when no upstream lists it or a
// template for it: it is sent to no upstream rather than to each, which
// told every upstream what its client asked for. When an upstream's
// listing of templates failed, a URI that fits none asks the upstreams
// again before it is refused (TestVirtualTemplateListFailureNotKept).
func (a *aggregator) holders(r *http.Request, s *aggSession, uri string) ([]string, error) {
	s.mu.Lock()
	listed := s.resources
	s.mu.Unlock()
	if listed == nil {
		if _, err := a.list(r, s, "resources/list", "resources"); err != nil {
			return nil, err
		}
		s.mu.Lock()
		listed = s.resources
		s.mu.Unlock()
	}
	if u, ok := listed[uri]; ok {
		return []string{u}, nil
	}
	s.mu.Lock()
	templates, failed := s.templates, s.templatesFailed
	s.mu.Unlock()
	relist := func() error {
		if _, err := a.list(r, s, "resources/templates/list", "resourceTemplates"); err != nil {
			return err
		}
		s.mu.Lock()
		templates = s.templates
		s.mu.Unlock()
		return nil
	}
	if templates == nil {
		if err := relist(); err != nil {
			return nil, err
		}
	} else if failed {
		// An upstream's listing failed last time: before a URI fits
		// none, it is asked again.
		if out, err := a.fitting(templates, uri); err != nil || len(out) > 0 {
			return out, err
		}
		if err := relist(); err != nil {
			return nil, err
		}
	}
	return a.fitting(templates, uri)
}

// fitting returns the upstreams, in their order, with a template of
// templates that uri fits.
func (a *aggregator) fitting(templates map[string][]*regexp.Regexp, uri string) ([]string, error) {
	n := 0
	for _, ts := range templates {
		n += len(ts)
	}
	if n > 0 && len(uri) > maxTemplateMatch/n {
		return nil, &intercept.WireError{Code: intercept.CodeInvalidParams, Message: fmt.Sprintf(
			"resource URI of %d bytes is too long to match against the %d resource templates of %s's upstreams (at most %d bytes in all)", len(uri), n, a.path(), maxTemplateMatch)}
	}
	var out []string
	for _, u := range a.vs.Upstreams {
		if slices.ContainsFunc(templates[u], func(re *regexp.Regexp) bool { return re.MatchString(uri) }) {
			out = append(out, u)
		}
	}
	return out, nil
}

// maxTemplateMatch bounds the bytes of a URI holders matches, all
// templates together: upstreams listing thousands of templates and a
// client sending a long URI would otherwise have it matched thousands of
// times.
const maxTemplateMatch = 16 << 20

// maxTemplates bounds the resource templates of a virtual server's
// upstreams that a session matches URIs to, all upstreams together, and
// the patterns kept compiled: each took a compiled pattern, for every
// session and every 2026-07-28 request, so upstreams listing 100,000 had
// about 2.5 s of CPU and 380 MiB spent on each.
const maxTemplates = 1000

// templatePattern is templateRegexp(t), compiled once for every session
// while it is among the last maxTemplates compiled.
func (a *aggregator) templatePattern(t string) *regexp.Regexp {
	if re, ok := a.patterns.Get(t); ok {
		return re
	}
	re := templateRegexp(t)
	a.patterns.Add(t, re)
	return re
}

// templateRegexp is the pattern of the URIs that t, a resource
// template, may make, matched as the SDKs that serve templates match
// them: its literal text as written; a simple expression ({id}) any run
// without a slash; any other ({+path}, {/seg}, {?q}, {path*}, or one RFC
// 6570 does not allow) any run at all. Nil when a brace is not closed.
// Fitted to RFC 6570's character classes, doc://item/alice@example.com,
// which the TypeScript and Python SDKs serve for doc://item/{id}, fitted
// nothing, and its read was refused.
func templateRegexp(t string) *regexp.Regexp {
	var b strings.Builder
	b.WriteString(`^(?s:`)
	for t != "" {
		i := strings.IndexByte(t, '{')
		if i < 0 {
			b.WriteString(regexp.QuoteMeta(t))
			break
		}
		b.WriteString(regexp.QuoteMeta(t[:i]))
		j := strings.IndexByte(t[i:], '}')
		if j < 0 {
			return nil
		}
		expr := t[i+1 : i+j]
		if expr != "" && (strings.ContainsAny(expr[:1], "+#./;?&=,!@|") || strings.HasSuffix(expr, "*")) {
			b.WriteString(`.*`)
		} else {
			b.WriteString(`[^/]*`)
		}
		t = t[i+j+1:]
	}
	b.WriteString(`)$`)
	re, err := regexp.Compile(b.String())
	if err != nil {
		return nil
	}
	return re
}

// innerCall sends one request to an upstream's route in this gateway, in
// the inner session of this virtual session (opened on first use), and
// returns its result; a JSON-RPC error comes back as *routeError.
func (a *aggregator) innerCall(r *http.Request, s *aggSession, upstream, method string, params jsontext.Value) (jsontext.Value, error) {
	in, err := a.inner(r, s, upstream)
	if err != nil {
		return nil, err
	}
	resp, err := a.roundTrip(r, s, upstream, in, method, params)
	if !s.modern && errors.Is(err, errInnerSessionGone) {
		// The route no longer has that session here: it ended upstream,
		// or it is bound to another replica (a stdio upstream behind a
		// sealed session). The virtual session goes on with a new one.
		s.mu.Lock()
		if s.inner[upstream] == in {
			delete(s.inner, upstream)
		}
		s.mu.Unlock()
		if in, err = a.inner(r, s, upstream); err != nil {
			return nil, err
		}
		resp, err = a.roundTrip(r, s, upstream, in, method, params)
	}
	if err != nil {
		return nil, err
	}
	if len(resp.Error) > 0 {
		return nil, &routeError{raw: resp.Error}
	}
	return resp.Result, nil
}

// heldAnswer reports whether resp is the route's answer that the call
// stays held for approval (its user could not answer, or gave up): the
// client may still cancel it.
func heldAnswer(resp *rpcResponse) bool {
	if resp == nil {
		return false
	}
	if len(resp.Error) > 0 {
		return intercept.StringMember(intercept.Member(resp.Error, "data"), "status") == "approval_required"
	}
	return intercept.StringMember(intercept.Member(resp.Result, "structuredContent"), "status") == "approval_required"
}

// decided reports whether a route's error is the gateway's own decision
// (intercept.RenderDecision in throw mode): its data carries the
// envelope's status and the call's txn_id.
func decided(e jsontext.Value) bool {
	var o struct {
		Data struct {
			Status string `json:"status"`
			TxnID  string `json:"txn_id"`
		} `json:"data"`
	}
	return json.Unmarshal(e, &o) == nil && o.Data.TxnID != "" && (o.Data.Status == "denied" || o.Data.Status == "approval_required")
}

// errInnerSessionGone is a route's 404 to an inner session
// (writeSessionGone): it ended, expired, or cannot be served here.
var errInnerSessionGone = errors.New("the route no longer has this session")

func (a *aggregator) inner(r *http.Request, s *aggSession, upstream string) (*innerSession, error) {
	s.mu.Lock()
	in, closed := s.inner[upstream], s.closed
	s.mu.Unlock()
	if in != nil {
		return in, nil
	}
	if closed {
		return nil, errVirtualEnded
	}
	if s.modern {
		in = &innerSession{version: modernVersion}
		s.mu.Lock()
		s.inner[upstream] = in
		s.mu.Unlock()
		return in, nil
	}
	var p map[string]jsontext.Value
	_ = json.Unmarshal(s.init, &p)
	if p == nil {
		p = map[string]jsontext.Value{}
	}
	p["protocolVersion"], _ = json.Marshal(s.version)
	// The client's capabilities go on as they are: requests an upstream
	// sends to the client are relayed (aggregate_asks.go).
	params, _ := json.Marshal(p, json.Deterministic(true))
	fresh := &innerSession{}
	resp, err := a.roundTrip(r, s, upstream, fresh, "initialize", params)
	if err != nil {
		return nil, err
	}
	if len(resp.Error) > 0 {
		return nil, &routeError{raw: resp.Error}
	}
	var res struct {
		ProtocolVersion string         `json:"protocolVersion"`
		Capabilities    jsontext.Value `json:"capabilities"`
	}
	_ = json.Unmarshal(resp.Result, &res)
	fresh.version = res.ProtocolVersion
	a.noteCaps(upstream, res.Capabilities)
	// An upstream may give no session (a stateless server): its route
	// serves each request on its own, as it does a client of its own, and
	// policy still sees the virtual session (virtualSessionKey). Before,
	// such an upstream was left out of every list and its tools could not
	// be called.
	note := a.innerRequest(r, http.MethodPost, upstream, fresh, []byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`))
	a.g.handleMCP(&discard{h: http.Header{}}, note)
	s.mu.Lock()
	prev, closed := s.inner[upstream], s.closed
	if prev == nil && !closed {
		s.inner[upstream] = fresh
	}
	s.mu.Unlock()
	switch {
	case closed:
		// Ended while this one opened: its end ended the inner sessions
		// it knew, and so this one now, which would go on unended and
		// hold calls of the ended session for approval.
		end := r.WithContext(context.WithValue(r.Context(), virtualSessionKey{}, s.id))
		a.g.handleMCP(&discard{h: http.Header{}}, a.innerRequest(end, http.MethodDelete, upstream, fresh, nil))
		return nil, errVirtualEnded
	case prev != nil: // another request got there first
		return prev, nil
	}
	return fresh, nil
}

// errVirtualEnded answers a request of a virtual session that its client
// ended (DELETE) while it was served: no inner session is opened for it.
var errVirtualEnded = &intercept.WireError{Code: intercept.CodeInvalidRequest,
	Message: "not sent: the session was ended (its client's DELETE) while this request was served; start a new session with initialize"}

// innerRequest builds a request to an upstream's route that carries the
// outer request's context (and so its authenticated principal), Host,
// client address, agent header and trace context.
func (a *aggregator) innerRequest(r *http.Request, method, upstream string, in *innerSession, body []byte) *http.Request {
	req, _ := http.NewRequestWithContext(r.Context(), method, "/mcp/"+upstream, bytes.NewReader(body))
	req.Host = r.Host
	req.RemoteAddr = r.RemoteAddr
	req.SetPathValue("name", upstream)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if in.id != "" {
		req.Header.Set("Mcp-Session-Id", in.id)
	}
	if in.version != "" {
		req.Header.Set("MCP-Protocol-Version", in.version)
	}
	for _, h := range []string{a.g.opts.AgentHeader, "Traceparent", "Tracestate"} {
		if h != "" && r.Header.Get(h) != "" {
			req.Header.Set(h, r.Header.Get(h))
		}
	}
	return req
}

// roundTrip posts one request to an upstream's route and reads its answer,
// as JSON or from an SSE stream. Other messages on the stream are
// list_changed notifications, passed to the session's GET stream; progress
// and log notifications, relayed on the client's SSE answer; and requests
// to the client (sampling, elicitation, roots), relayed the same way
// (aggregate_asks.go).
func (a *aggregator) roundTrip(r *http.Request, s *aggSession, upstream string, in *innerSession, method string, params jsontext.Value) (resp *rpcResponse, err error) {
	id := a.ids.Add(1)
	var name string
	if s.modern {
		if params, name, err = modernParams(method, params, s.meta); err != nil {
			return nil, err
		}
	}
	// The related task as this upstream knows it (in 2026-07-28 the
	// client's _meta, carried into every inner request, may hold it too).
	params = relatedTaskFor(params, relatedTaskOf(r), upstream)
	body, err := json.Marshal(rpcRequest{JSONRPC: "2.0", ID: jsontext.Value(fmt.Sprint(id)), Method: method, Params: params})
	if err != nil {
		return nil, err
	}
	rec := &buffered{h: http.Header{}}
	relay, _ := r.Context().Value(relayKey{}).(func([]byte))
	var send func([]byte) bool
	if relay != nil {
		send = func(b []byte) bool { relay(b); return true }
	} else if !s.modern {
		// The client takes a JSON answer to this call: a request to it
		// can still go on its GET stream, if one is open.
		send = s.toGET
	}
	var asked askSet
	defer asked.drop(s)
	var held atomic.Bool // the route held the call (markHeld)
	if outer, ok := r.Context().Value(outerIDKey{}).(string); ok && namedMethod(method) {
		untrack, cancelled := s.track(r.Context(), outer, pendingCall{upstream: upstream, in: in, id: id})
		if cancelled {
			return nil, errCancelledEarly
		}
		defer func() { untrack(heldAnswer(resp) || held.Load()) }()
	}
	rec.onEvent = func(data []byte) {
		var m rpcResponse
		if json.Unmarshal(data, &m) != nil || m.Method == "" || strings.HasSuffix(m.Method, "/list_changed") {
			// An answer, or a list change, is read once the call ends;
			// the rest is handled here and let go, so what a call in
			// progress holds does not grow with its stream.
			rec.events = append(rec.events, bytes.Clone(data))
		}
		switch {
		case m.Method == "":
		case len(m.ID) > 0:
			// A request to the client (sampling, elicitation, roots, an
			// approval question) goes to it on its SSE answer.
			if key := a.ask(r, s, upstream, in, data, send); key != "" {
				asked.add(key)
			}
		case m.Method == "notifications/cancelled":
			// It names a request by the upstream's id: passed on only
			// as the client knows that request, one this upstream asked.
			if out := a.cancelOut(s, upstream, data); relay != nil && out != nil {
				relay(out)
			}
		case relay != nil && strings.HasPrefix(m.Method, "notifications/") && !strings.HasSuffix(m.Method, "/list_changed"):
			// Progress and log notifications about this call go to the
			// client as they come, on its own SSE answer.
			relay(taskMessageOut(upstream, data))
		case m.Method == "notifications/tasks/status":
			// A task's status (only the caller's pass the route) goes to
			// the GET stream of a client that takes JSON.
			s.toGET(taskMessageOut(upstream, data))
		}
	}
	req := a.innerRequest(r, http.MethodPost, upstream, in, body)
	req = req.WithContext(context.WithValue(req.Context(), heldMarkKey{}, &held))
	if s.modern {
		req.Header.Set(hdrMethod, method)
		if name != "" {
			req.Header.Set(hdrName, encodeHeaderValue(name))
		}
		if method == "tools/call" {
			// The route checks them against the inner call's arguments
			// (TestAggregateParamHeaders2026).
			if m, err := intercept.DecodeMessage(body); err == nil {
				for k, v := range a.g.ic.ParamHeaders(upstream, m) {
					req.Header.Set(k, v)
				}
			}
		}
	}
	a.g.handleMCP(rec, req)
	if method == "initialize" {
		in.id = rec.h.Get("Mcp-Session-Id")
	}
	var msgs [][]byte
	switch {
	case rec.sink != nil:
		rec.sink.end()
		msgs = rec.events
	case strings.HasPrefix(rec.h.Get("Content-Type"), "text/event-stream"):
		msgs = sseData(rec.body.Bytes())
	default:
		msgs = [][]byte{rec.body.Bytes()}
	}
	var found *rpcResponse
	for _, m := range msgs {
		var resp rpcResponse
		if json.Unmarshal(m, &resp) != nil {
			continue
		}
		if resp.Method != "" {
			a.notified(s, resp.Method, m)
			continue
		}
		if string(resp.ID) == fmt.Sprint(id) || (len(resp.Error) > 0 && (len(resp.ID) == 0 || string(resp.ID) == "null")) {
			found = &resp
		}
	}
	if found == nil {
		if rec.status() == http.StatusNotFound && in.id != "" {
			return nil, fmt.Errorf("upstream %q: %w", upstream, errInnerSessionGone)
		}
		return nil, fmt.Errorf("upstream %q answered %s with HTTP %d and no JSON-RPC response", upstream, method, rec.status())
	}
	return found, nil
}

// notified handles msg, a notification from an upstream: a list change
// drops the session's names (the next call lists again) and is passed on
// in the upstream's shape: with its params, when it had any (before, a
// `params: {}` was dropped), but not their _meta, which is about the
// upstream's own session or subscription.
func (a *aggregator) notified(s *aggSession, method string, msg []byte) {
	if !strings.HasPrefix(method, "notifications/") || !strings.HasSuffix(method, "/list_changed") {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	switch method {
	case "notifications/tools/list_changed":
		s.tools = nil
	case "notifications/prompts/list_changed":
		s.prompts = nil
	case "notifications/resources/list_changed":
		s.resources, s.templates = nil, nil
	}
	name, err := json.Marshal(method) // as JSON: an upstream names it
	if err != nil {
		return
	}
	out := jsontext.Value(`{"jsonrpc":"2.0","method":` + string(name) + `}`)
	if params := intercept.Member(msg, "params"); params.Kind() == '{' {
		if p, err := intercept.WithoutMember(params, "_meta"); err == nil {
			out = withMember(out, "params", p)
		}
	}
	if s.notify != nil {
		select {
		case s.notify <- out:
		default: // the stream is behind; one pending change is enough
		}
	}
}

// get serves the session's GET stream: list_changed from any upstream,
// the other notifications and the requests upstreams send on theirs. It
// opens a GET stream on every upstream's route for as long as it lasts.
func (a *aggregator) get(w http.ResponseWriter, r *http.Request) {
	s := a.session(w, r, nil)
	if s == nil {
		return
	}
	r, stop, live := a.g.untilExpiry(r, s.id)
	defer stop()
	ch := make(chan []byte, 8)
	s.mu.Lock()
	if s.notify != nil || s.closed {
		s.mu.Unlock()
		writeJSONRPCError(w, http.StatusConflict, nil, &intercept.WireError{Code: intercept.CodeInvalidRequest, Message: "this session already has a GET stream"})
		return
	}
	s.notify = ch
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		if s.notify == ch {
			s.notify = nil
		}
		s.mu.Unlock()
	}()
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	for _, u := range a.vs.Upstreams {
		in, err := a.inner(r, s, u)
		if err != nil {
			continue
		}
		wg.Go(func() {
			req := a.innerRequest(s.policySees(r.WithContext(ctx)), http.MethodGet, u, in, nil)
			req.Header.Set("Accept", "text/event-stream")
			send := s.toGET
			var asked askSet
			defer asked.drop(s)
			a.g.handleMCP(&sseSink{h: http.Header{}, on: func(m []byte) {
				var n rpcResponse
				switch {
				case json.Unmarshal(m, &n) != nil || n.Method == "":
				case len(n.ID) > 0: // a request to the client, on its GET stream
					if key := a.ask(r, s, u, in, m, send); key != "" {
						asked.add(key)
					}
				case n.Method == "notifications/tasks/status":
					// The route passes only those of the caller's tasks.
					send(taskMessageOut(u, m))
				case n.Method == "notifications/cancelled":
					if out := a.cancelOut(s, u, m); out != nil {
						send(out)
					}
				case strings.HasPrefix(n.Method, "notifications/") && !strings.HasSuffix(n.Method, "/list_changed"):
					// Progress and log notifications an upstream sends on
					// its GET stream go on the client's, as they would
					// directly: mcp-go's server sends a call's first
					// progress there, before its answer becomes a stream.
					// A related task is named as the client knows it,
					// as on a call's answer.
					send(taskMessageOut(u, m))
				default:
					a.notified(s, n.Method, m)
				}
			}}, req)
		})
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	_ = rc.Flush()
	for {
		select {
		case <-ctx.Done():
			return
		case m, ok := <-ch:
			if !ok {
				return
			}
			if live != nil && live() != nil {
				return
			}
			if _, err := fmt.Fprintf(w, "event: message\ndata: %s\n\n", m); err != nil {
				return
			}
			if rc.Flush() != nil {
				return
			}
		}
	}
}

// routeError is the JSON-RPC error object an upstream's route
// answered, passed to the client as it is.
type routeError struct{ raw jsontext.Value }

// methodNotFound reports whether err is an upstream's answer that it
// serves no such method.
func methodNotFound(err error) bool {
	var re *routeError
	if !errors.As(err, &re) {
		return false
	}
	var o struct {
		Code int `json:"code"`
	}
	return json.Unmarshal(re.raw, &o) == nil && o.Code == intercept.CodeMethodNotFound
}

func (e *routeError) Error() string {
	var o struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	}
	_ = json.Unmarshal(e.raw, &o)
	return fmt.Sprintf("jsonrpc %d: %s", o.Code, o.Message)
}

// buffered is a ResponseWriter that keeps what an inner POST answers;
// with onEvent set, the events of an SSE answer are handed over as they
// arrive instead, and onEvent keeps (in events) what is read at the end.
type buffered struct {
	h       http.Header
	code    int
	body    bytes.Buffer
	onEvent func([]byte)
	sink    *sseSink
	events  [][]byte // what onEvent kept of an SSE answer, which body then does not hold
}

func (b *buffered) Header() http.Header { return b.h }
func (b *buffered) WriteHeader(code int) {
	if b.code == 0 {
		b.code = code
	}
}
func (b *buffered) Write(p []byte) (int, error) {
	b.WriteHeader(http.StatusOK)
	if b.onEvent != nil && strings.HasPrefix(b.h.Get("Content-Type"), "text/event-stream") {
		if b.sink == nil {
			b.sink = &sseSink{h: http.Header{}, on: b.onEvent}
		}
		return b.sink.Write(p)
	}
	return b.body.Write(p)
}
func (b *buffered) Flush() {}
func (b *buffered) status() int {
	if b.code == 0 {
		return http.StatusOK
	}
	return b.code
}

// discard is a ResponseWriter for answers nobody reads.
type discard struct{ h http.Header }

func (d *discard) Header() http.Header         { return d.h }
func (d *discard) WriteHeader(int)             {}
func (d *discard) Write(p []byte) (int, error) { return len(p), nil }
func (d *discard) Flush()                      {}

// sseSink is a ResponseWriter that reads an inner GET stream as it is
// written, one SSE event at a time.
type sseSink struct {
	h    http.Header
	on   func([]byte)
	line []byte
	data []byte
}

// end hands on the last event of a stream that ended without the blank
// line closing it.
func (s *sseSink) end() {
	if len(s.line) > 0 {
		_, _ = s.Write([]byte("\n"))
	}
	_, _ = s.Write([]byte("\n"))
}

func (s *sseSink) Header() http.Header { return s.h }
func (s *sseSink) WriteHeader(int)     {}
func (s *sseSink) Flush()              {}
func (s *sseSink) Write(p []byte) (int, error) {
	for _, c := range p {
		if c != '\n' {
			s.line = append(s.line, c)
			continue
		}
		line := strings.TrimSuffix(string(s.line), "\r")
		s.line = s.line[:0]
		switch {
		case line == "":
			if len(s.data) > 0 {
				s.on(s.data)
				s.data = nil
			}
		case strings.HasPrefix(line, "data:"):
			if len(s.data) > 0 {
				s.data = append(s.data, '\n')
			}
			s.data = append(s.data, strings.TrimPrefix(strings.TrimPrefix(line, "data:"), " ")...)
		}
	}
	return len(p), nil
}

// sseData returns the data of each event of a complete SSE body.
func sseData(body []byte) [][]byte {
	var out [][]byte
	var data []byte
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(nil, 64<<20)
	flush := func() {
		if len(data) > 0 {
			out = append(out, data)
			data = nil
		}
	}
	for sc.Scan() {
		line := strings.TrimSuffix(sc.Text(), "\r")
		switch {
		case line == "":
			flush()
		case strings.HasPrefix(line, "data:"):
			if len(data) > 0 {
				data = append(data, '\n')
			}
			data = append(data, strings.TrimPrefix(strings.TrimPrefix(line, "data:"), " ")...)
		}
	}
	flush()
	return out
}

// continues returns why req, a request on session s, cannot go on in it,
// or nil: as on a route's session (claim.continues, classify), its _meta
// may declare no other protocol version than the session's, nor its
// Mcp-Protocol-Version header one of another era (otherEra), and its
// Mcp-Method and Mcp-Name headers, where present, must agree with its
// body.
func (s *aggSession) continues(r *http.Request, req rpcRequest) error {
	if v := intercept.StringMember(intercept.Member(req.Params, "_meta"), "io.modelcontextprotocol/protocolVersion"); v != "" && v != s.version {
		return invalid(fmt.Sprintf("the protocol version of a session cannot change: this session uses %s, the request declares %s in _meta", orUnknown(s.version), v))
	}
	if hv := r.Header.Get(hdrVersion); otherEra(hv, s.version) {
		return mismatch(fmt.Sprintf("%s header %q does not match the session's protocol version %q", hdrVersion, hv, s.version))
	}
	return checkModernHeaders(r, req, false)
}

// checkModernHeaders checks a request's Mcp-Method, Mcp-Name and
// Mcp-Protocol-Version headers against its body, as the upstream routes do
// (classify): a request whose headers say something else than its body,
// or say it twice (a filter in front may read the second), is refused;
// modern (a 2026-07-28 request) requires those its method has. The inner
// requests are written afresh, but what sits in front of the gateway acts
// on the client's.
func checkModernHeaders(r *http.Request, req rpcRequest, modern bool) error {
	if k := underscoredProtocolHeader(r.Header); k != "" {
		return errUnderscored(k)
	}
	for _, h := range [...]string{hdrVersion, hdrMethod, hdrName} {
		if n := len(r.Header.Values(h)); n > 1 {
			return mismatch(fmt.Sprintf("the %s header must appear once; it appears %d times", h, n))
		}
	}
	if hv, mv := r.Header.Get(hdrVersion), intercept.StringMember(intercept.Member(req.Params, "_meta"), "io.modelcontextprotocol/protocolVersion"); hv != "" && mv != "" && hv != mv {
		return mismatch(fmt.Sprintf("%s header %q does not match _meta protocol version %q", hdrVersion, hv, mv))
	}
	// A notification without Mcp-Method has nothing to disagree with its
	// body, and is taken as a route takes it (classify).
	if hm := r.Header.Get(hdrMethod); hm != req.Method && (hm != "" || modern && len(req.ID) > 0) {
		return mismatch(fmt.Sprintf("%s header %q does not match body method %q", hdrMethod, hm, req.Method))
	}
	hn, hasName := r.Header.Get(hdrName), len(r.Header.Values(hdrName)) > 0
	if intercept.TaskMethod(req.Method) && req.Method != "tasks/result" && hasName {
		// The tasks extension names the task in Mcp-Name: the body's
		// taskId, as the client knows it.
		name, ok := decodeHeaderValue(hn)
		if id := intercept.StringMember(req.Params, "taskId"); !ok || name != id {
			return mismatch(fmt.Sprintf("%s header %q does not match body taskId %q", hdrName, hn, id))
		}
		return nil
	}
	if !namedMethod(req.Method) {
		if hasName {
			return mismatch(fmt.Sprintf("%s header is not allowed for method %q", hdrName, req.Method))
		}
		return nil
	}
	want := intercept.StringMember(req.Params, "name")
	if req.Method == "resources/read" {
		want = intercept.StringMember(req.Params, "uri")
	}
	if !hasName && !modern {
		return nil
	}
	name, ok := decodeHeaderValue(hn)
	if !hasName || !ok || name != want {
		return mismatch(fmt.Sprintf("%s header %q does not match body name %q", hdrName, hn, want))
	}
	return nil
}

// modernParams puts the client's _meta (version, client info and
// capabilities) into an inner 2026-07-28 request's params, keeping what
// the params' own _meta says (a progress token), and returns the name its
// Mcp-Name header must carry.
func modernParams(method string, params, meta jsontext.Value) (jsontext.Value, string, error) {
	var p map[string]jsontext.Value
	if len(params) > 0 {
		if err := json.Unmarshal(params, &p); err != nil {
			return nil, "", err
		}
	}
	if p == nil {
		p = map[string]jsontext.Value{}
	}
	var m map[string]jsontext.Value
	_ = json.Unmarshal(meta, &m)
	var own map[string]jsontext.Value
	_ = json.Unmarshal(p["_meta"], &own)
	if m == nil {
		m = map[string]jsontext.Value{}
	}
	for k, v := range own {
		m[k] = v
	}
	var err error
	if p["_meta"], err = json.Marshal(m, json.Deterministic(true)); err != nil {
		return nil, "", err
	}
	out, err := json.Marshal(p, json.Deterministic(true))
	if err != nil {
		return nil, "", err
	}
	var name string
	switch method {
	case "tools/call", "prompts/get":
		_ = json.Unmarshal(p["name"], &name)
	case "resources/read":
		_ = json.Unmarshal(p["uri"], &name)
	}
	if namedMethod(method) && (name == "" || strings.ContainsAny(name, "\r\n")) {
		return nil, "", &intercept.WireError{Code: intercept.CodeInvalidParams, Message: method + " needs a name"}
	}
	return out, name, nil
}

// discover answers server/discover for the virtual server.
// discoverFor answers server/discover. The virtual server speaks
// 2026-07-28 only if every upstream does, since it sends each request on in
// the client's era: when one answers server/discover with an error (a
// stateful server's -32022, a 2025-era server's "method not found") or
// without 2026-07-28 among its supportedVersions, the
// virtual server answers as a stateful server does, -32022 naming the
// versions it speaks, and the client falls back to initialize. An upstream
// that is down decides nothing (it drops out of lists either way).
func (a *aggregator) discoverFor(r *http.Request, s *aggSession) (jsontext.Value, error) {
	if !s.modern {
		return a.discover(), nil
	}
	if a.legacyEra(r, s) {
		return nil, &intercept.WireError{Code: codeUnsupportedVersion,
			Message: fmt.Sprintf("protocol version %q is not supported by %s: an upstream speaks only earlier versions", modernVersion, a.path()),
			Data:    map[string]any{"supported": aggVersions, "requested": modernVersion}}
	}
	return a.discover(), nil
}

// eraTTL is how long the answer of legacyEra is kept: a flood of
// server/discover must not become a flood of probes of every upstream.
const eraTTL = 30 * time.Second

// legacyEra reports whether an upstream speaks only 2025-era versions,
// probing each one's server/discover at most once per eraTTL.
func (a *aggregator) legacyEra(r *http.Request, s *aggSession) bool {
	a.eraMu.Lock()
	defer a.eraMu.Unlock()
	if !a.eraAt.IsZero() && time.Since(a.eraAt) < eraTTL {
		return a.eraLegacy
	}
	var legacy atomic.Bool
	var wg sync.WaitGroup
	for _, u := range a.vs.Upstreams {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(r.Context(), a.listTimeout)
			defer cancel()
			res, err := a.innerCall(r.WithContext(ctx), s, u, "server/discover", nil)
			if err != nil {
				if _, ok := errors.AsType[*routeError](err); ok {
					legacy.Store(true)
				}
				return
			}
			var d struct {
				Supported    []string       `json:"supportedVersions"`
				Capabilities jsontext.Value `json:"capabilities"`
			}
			err = json.Unmarshal(res, &d)
			a.noteCaps(u, d.Capabilities)
			if err != nil || !slices.Contains(d.Supported, modernVersion) {
				legacy.Store(true) // it answers discover but not in this era (go-sdk's stateful server)
			}
		})
	}
	wg.Wait()
	a.eraLegacy, a.eraAt = legacy.Load(), time.Now()
	return a.eraLegacy
}

// codeUnsupportedVersion is MCP's error for a protocol version the server
// does not speak.
const codeUnsupportedVersion = -32022

func (a *aggregator) discover() jsontext.Value {
	name := "sluice"
	if a.vs.Name != "" {
		name = "sluice/" + a.vs.Name
	}
	// List changes and resource updates come on subscriptions/listen
	// (aggregate_listen.go): resources to subscribe to if an upstream
	// offers them.
	resources := map[string]any{"listChanged": true}
	if a.subscribes() {
		resources["subscribe"] = true
	}
	caps := map[string]any{"tools": map[string]any{"listChanged": true}, "prompts": map[string]any{"listChanged": true}, "resources": resources}
	if t := a.tasksCapability(); t != nil {
		caps["tasks"] = t
	}
	if l := a.loggingCapability(); l != nil {
		caps["logging"] = l
	}
	if e := a.extensionsCapability(); e != nil {
		caps["extensions"] = e
	}
	res := map[string]any{
		"supportedVersions": []string{modernVersion},
		"capabilities":      caps,
		"resultType":        "complete",
		"_meta":             map[string]any{"io.modelcontextprotocol/serverInfo": map[string]any{"name": name, "version": "1"}},
	}
	cacheHints(res)
	b, _ := json.Marshal(res, json.Deterministic(true))
	return b
}

// cacheHints sets the members 2026-07-28 requires of a cacheable result
// (SEP-2549: server/discover and the lists) that the virtual server makes
// itself: ttlMs 0 and cacheScope private, immediately stale and never
// shared, which is always true of an answer merged from upstreams (a
// client refuses one without them: TestAggregateCacheHints2026).
func cacheHints(res map[string]any) {
	res["ttlMs"] = 0
	res["cacheScope"] = "private"
}

// encodeHeaderValue writes v as MCP's =?base64?…?= form when it is not
// plain printable ASCII (or could be read as that form).
func encodeHeaderValue(v string) string {
	for i := 0; i < len(v); i++ {
		if v[i] < 0x20 || v[i] > 0x7e {
			return "=?base64?" + base64.StdEncoding.EncodeToString([]byte(v)) + "?="
		}
	}
	if strings.HasPrefix(v, "=?base64?") {
		return "=?base64?" + base64.StdEncoding.EncodeToString([]byte(v)) + "?="
	}
	return v
}

// isHeaderMismatch reports whether err is a header mismatch (mismatch):
// answered 400, as a route answers one (classify).
func isHeaderMismatch(err error) bool {
	we, ok := errors.AsType[*intercept.WireError](err)
	return ok && we.Code == intercept.CodeHeaderMismatch
}
