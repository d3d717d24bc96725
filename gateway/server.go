// Package gateway is Sluice's network face: listeners, MCP transports,
// sessions and the relay between a downstream client and an upstream
// server. Every client message passes package intercept's decision point
// before anything reaches an upstream.
//
//	g, err := gateway.New(gateway.Options{Upstreams: ups}, &intercept.Interceptor{Decider: d}, logger)
//	if err != nil { ... }
//	defer g.Close()
//	http.ListenAndServe("127.0.0.1:8080", g.Handler())
package gateway

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"net/url"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluicehq/sluice/gateway/transport"
	"github.com/sluicehq/sluice/intercept"
	"github.com/sluicehq/sluice/internal/h1"
	"github.com/sluicehq/sluice/internal/throttle"
	"github.com/sluicehq/sluice/telemetry"
)

// Gateway serves every configured upstream downstream over Streamable
// HTTP, legacy HTTP+SSE and WebSocket. It is safe for concurrent use.
type Gateway struct {
	opts        Options
	ident       identifier
	ic          *intercept.Interceptor
	log         *slog.Logger
	routes      map[string]*route
	sessions    *sessionTable
	limits      *limits      // session counts: in all, per agent, per address
	bodies      *byteBudget  // request body bytes held
	ends        *sessionEnds // upstream DELETEs of ended sessions, paced
	sealer      *sealer      // seals session ids when Options.SessionKeys are set
	client      *http.Client
	sse         map[string]*transport.SSEServer // route name -> legacy SSE server
	stateless   map[string]*statelessPool       // bridged route name -> its 2026-07-28 connections
	virtual     map[string]*aggregator          // virtual server name ("" for /mcp) -> its handler
	withheld    *withheldTasks                  // messages about another's task not delivered
	headerDrops *headerWithholding              // client headers a closed upstream was not sent
	exchanges   atomic.Uint64                   // numbers the POSTs (exchange.seq)

	ctx    context.Context // ends with Close; parent of every session
	cancel context.CancelFunc
	// drain ends when shutdown begins: GET streams close at once (clients
	// reconnect elsewhere) while in-flight calls finish.
	drain    context.Context
	drainNow context.CancelFunc
	wg       sync.WaitGroup // session goroutines
}

type route struct {
	up     Upstream
	url    *url.URL         // streamable-http upstreams: relayed at the HTTP level
	dialer transport.Dialer // every upstream: message-level bridging
	client *http.Client     // sends with the upstream's oauth: credentials; nil: the gateway's client
	// children bounds the stdio processes of the route's sessions and
	// principals (see dialSession, statelessPool); nil for other
	// transports.
	children *childSlots
	// stateless holds a bridged route's 2026-07-28 connections; nil for
	// a Streamable HTTP upstream.
	stateless *statelessPool
	// lister lists the upstream's tools for a client that did not,
	// before its call is decided (lister.go).
	lister *toolLister
	// passHeaders are the client headers a closed upstream still gets
	// (upstreams[].pass_headers, canonical); nil for none (headers.go).
	passHeaders map[string]bool
	// setHeaders are the names of the headers the gateway sets on the
	// upstream's requests (upstreams[].headers); nil for none. A client
	// header spelt as one of them is not forwarded (gatewaySets).
	setHeaders []string
	// refusals sends an HTTP upstream the gateway's answers to its
	// withheld requests (upstreamasks.go).
	refusals askRefusals
}

var validName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`)

// dialUpstream opens connections to upstreams, for both transports.
var dialUpstream = (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext

// New checks opts and returns a gateway. ic is the decision point; log may
// be nil to discard logs.
func New(opts Options, ic *intercept.Interceptor, log *slog.Logger) (*Gateway, error) {
	if ic == nil {
		return nil, errors.New("gateway: nil interceptor")
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if opts.AgentHeaderRequired && opts.AgentHeader == "" {
		return nil, errors.New("gateway: AgentHeaderRequired needs AgentHeader, the header that names the agent")
	}
	// No-op metrics record nothing: nil spares every call measuring.
	// (A no-op tracer stays: it still carries a client's trace context
	// on upstream; telemetry skips building its spans' attributes.)
	if _, nop := opts.Metrics.(telemetry.NopTelemetry); nop {
		opts.Metrics = nil
	}
	g := &Gateway{
		opts:        opts,
		ident:       identifier{header: opts.AgentHeader, required: opts.AgentHeaderRequired},
		ic:          ic,
		log:         log,
		routes:      make(map[string]*route),
		sessions:    newSessionTable(opts.maxSessions(), opts.idleTimeout(), opts.now),
		limits:      newLimits(&opts),
		sse:         make(map[string]*transport.SSEServer),
		stateless:   make(map[string]*statelessPool),
		withheld:    &withheldTasks{log: log},
		headerDrops: &headerWithholding{log: log},
		// Plain-HTTP upstreams are served on the calling goroutine
		// (internal/h1: no reader and writer goroutines per connection
		// to hand each call between); TLS upstreams by net/http.
		// Upstream redirects are not followed (h1.NoRedirects).
		client: h1.NoRedirects(&http.Client{Transport: &h1.Transport{MaxIdlePerHost: 256, Dial: dialUpstream, Fallback: &http.Transport{
			Proxy:                 nil, // an MCP upstream is addressed directly
			DialContext:           dialUpstream,
			MaxIdleConns:          1024,
			MaxIdleConnsPerHost:   256,
			IdleConnTimeout:       90 * time.Second,
			TLSHandshakeTimeout:   10 * time.Second,
			ResponseHeaderTimeout: 0, // tool calls may run long; the client's context bounds them
			ForceAttemptHTTP2:     true,
		}}}),
	}
	if m, ok := opts.Metrics.(interface{ MessageWithheld(reason string) }); ok {
		g.withheld.metrics = m
	}
	if m, ok := opts.Metrics.(interface{ HeadersWithheld(string, int) }); ok {
		g.headerDrops.metrics = m
	}
	if len(opts.SessionKeys) > 0 {
		sl, err := newSealer(opts.SessionKeys)
		if err != nil {
			return nil, fmt.Errorf("gateway: %w", err)
		}
		sl.maxAge = opts.sessionMaxAge()
		if opts.now != nil {
			sl.now = opts.now
		}
		g.sealer = sl
	}
	for i := range opts.Upstreams {
		up := opts.Upstreams[i]
		if !validName.MatchString(up.Name) {
			return nil, fmt.Errorf("gateway: upstreams[%d]: name %q must be letters, digits, '.', '_' or '-'", i, up.Name)
		}
		if _, dup := g.routes[up.Name]; dup {
			return nil, fmt.Errorf("gateway: upstreams[%d]: name %q is used twice", i, up.Name)
		}
		r, err := g.newRoute(up)
		if err != nil {
			return nil, fmt.Errorf("gateway: upstreams[%d] (%s): %w", i, up.Name, err)
		}
		if err := up.CheckInheritEnv(); err != nil {
			return nil, fmt.Errorf("gateway: upstreams[%d] (%s): %w", i, up.Name, err)
		}
		if up.MaxChildren < 0 || (up.MaxChildren > 0 && r.up.Transport != TransportStdio) {
			return nil, fmt.Errorf("gateway: upstreams[%d] (%s): max_children %d: want a positive number, on a stdio upstream only", i, up.Name, up.MaxChildren)
		}
		if r.up.Transport == TransportStdio {
			r.children = &childSlots{route: up.Name, max: up.maxChildren(), metrics: g.limits.metrics}
		}
		r.lister = newToolLister(g, r)
		g.routes[up.Name] = r
	}
	g.virtual = map[string]*aggregator{}
	for i := range opts.VirtualServers {
		vs := opts.VirtualServers[i]
		if err := vs.Check(opts.Upstreams); err != nil {
			return nil, fmt.Errorf("gateway: virtual_servers[%d]: %w", i, err)
		}
		if _, dup := g.virtual[vs.Name]; dup {
			return nil, fmt.Errorf("gateway: virtual_servers[%d]: name %q is used twice", i, vs.Name)
		}
		g.virtual[vs.Name] = newAggregator(g, vs)
	}
	g.bodies = newByteBudget(opts.maxInflightBody(), max(opts.maxInflightBody()/2, opts.maxBody()), g.limits.metrics)
	g.ends = newSessionEnds(g)
	g.ctx, g.cancel = context.WithCancel(context.Background())
	g.drain, g.drainNow = context.WithCancel(g.ctx)
	g.wg.Add(1)
	go func() {
		defer g.wg.Done()
		g.sessions.reap(g.ctx, g.endSession)
	}()
	for name, r := range g.routes {
		if r.url == nil {
			p := newStatelessPool(g, r)
			g.stateless[name], r.stateless = p, p
			g.wg.Add(1)
			go func() {
				defer g.wg.Done()
				p.reap(g.ctx)
			}()
		}
		g.sse[name] = &transport.SSEServer{
			MessagePath: func(id string) string { return "/sse/" + name + "/message?sessionId=" + url.QueryEscape(id) },
			OnSession: func(ctx context.Context, id string, c transport.Conn) {
				opened, _ := ctx.Value(openedKey{}).(*http.Request)
				g.serveConn(ctx, r, c, id, "sse", opened)
			},
			MaxMessageBytes: opts.maxBody(),
			// A POST must come from the principal whose GET opened the
			// session: the header's value is all there is to compare.
			Owner: func(r *http.Request) string {
				c, err := g.ident.identify(r, nil)
				if err != nil {
					return refusedOwner
				}
				return c.header
			},
			OnOwnerMismatch: func(r *http.Request, session, owner string) {
				c, _ := g.ident.identify(r, nil)
				g.refusals().refused("sse", name, session, principal{header: owner, agent: owner}, c, errors.New("session of another agent"))
			},
		}
	}
	return g, nil
}

// newRoute returns the route to up. Every message read from it is
// bounded by max_answer_bytes, whatever its transport.
func (g *Gateway) newRoute(up Upstream) (*route, error) {
	limit := g.opts.maxAnswer()
	if up.Transport == "" {
		switch {
		case up.URL != "":
			up.Transport = TransportStreamableHTTP
		case up.Command != "":
			up.Transport = TransportStdio
		}
	}
	hdr := make(http.Header)
	for k, v := range up.Headers {
		hdr.Set(k, v)
	}
	client, err := upstreamClient(up, g.client.Transport)
	if err != nil {
		return nil, err
	}
	up.described = up.describe() // parsed once, not on every call
	r := &route{up: up, client: client}
	for k := range up.Headers {
		r.setHeaders = append(r.setHeaders, k)
	}
	if err := up.CheckPassHeaders(); err != nil {
		return nil, err
	}
	for _, h := range up.PassHeaders {
		if r.passHeaders == nil {
			r.passHeaders = make(map[string]bool, len(up.PassHeaders))
		}
		r.passHeaders[http.CanonicalHeaderKey(h)] = true
	}
	switch up.Transport {
	case TransportStreamableHTTP:
		u, err := parseHTTPURL(up.URL)
		if err != nil {
			return nil, err
		}
		r.url = u
		r.dialer = &transport.StreamableHTTPDialer{URL: up.URL, Header: hdr, Client: client, MaxMessageBytes: limit,
			// A 2026-07-28 call from /sse or /ws (or the gateway's own)
			// carries the arguments its tool marks, as one on /mcp does.
			ParamHeaders: func(msg []byte) map[string]string {
				m, err := intercept.DecodeMessage(msg)
				if err != nil {
					return nil
				}
				return g.ic.ParamHeaders(up.Name, m)
			}}
	case TransportSSE:
		if _, err := parseHTTPURL(up.URL); err != nil {
			return nil, err
		}
		r.dialer = &transport.SSEDialer{URL: up.URL, Header: hdr, Client: client, MaxMessageBytes: limit, WriteStall: g.opts.writeStallTimeout()}
	case TransportWebSocket:
		u, err := url.Parse(up.URL)
		if err != nil || (u.Scheme != "ws" && u.Scheme != "wss") {
			return nil, fmt.Errorf("url %q: a websocket upstream needs a ws:// or wss:// URL", up.URL)
		}
		r.dialer = &transport.WSDialer{URL: up.URL, Header: hdr, MaxMessageBytes: limit, WriteStall: g.opts.writeStallTimeout()}
	case TransportStdio:
		if up.Command == "" {
			return nil, errors.New("a stdio upstream needs a command")
		}
		env := make([]string, 0, len(up.Env))
		for k, v := range up.Env {
			env = append(env, k+"="+v)
		}
		// A crashed child is restarted with backoff and the session's
		// initialize replayed; calls pending at the crash get an error.
		stderrMetrics, _ := g.opts.Metrics.(stderrMetrics)
		r.dialer = &transport.Restarting{
			Dialer: &transport.StdioDialer{Command: up.Command, Args: up.Args, Env: env, InheritEnv: up.inheritEnv(),
				Stderr: newStderrLog(g.log, up.Name, stderrMetrics), MaxMessageBytes: limit},
			OnRestart: func(err error) {
				// A line too long is not passed on; the calls waiting
				// get the restart's error, which names the limit.
				err = g.withheld.readFailed(err)
				g.log.Warn("stdio upstream failed; restarting", "upstream", up.Name, "err", err)
			},
		}
	default:
		return nil, fmt.Errorf("transport %q: want streamable-http, sse, stdio or websocket", up.Transport)
	}
	return r, nil
}

func parseHTTPURL(s string) (*url.URL, error) {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("url %q: want an absolute http:// or https:// URL", s)
	}
	return u, nil
}

// Handler returns the gateway's HTTP handler: /mcp/{name}, /sse/{name},
// /ws/{name}, /healthz and /readyz, and /mcp when a virtual server has no
// name (else a 404 there names the routes).
func (g *Gateway) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/mcp/{name}", g.limitBodies(http.HandlerFunc(g.handleMCP)))
	if a := g.virtual[""]; a != nil {
		mux.Handle("/mcp", g.limitBodies(a))
		mux.HandleFunc("GET /sse", func(w http.ResponseWriter, r *http.Request) { g.serveVirtualConn(w, r, a, TransportSSE) })
		// Identified first, as every other route is: the SSE server's
		// Owner cannot answer with identify's error, and a POST identify
		// refused went on as owner "" (TestAttackSSEPostIdentifyRefused).
		mux.Handle("POST /sse/message", g.limitBodies(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if g.identified(w, r) {
				a.sse.HandleMessage(w, r)
			}
		})))
		mux.HandleFunc("GET /ws", func(w http.ResponseWriter, r *http.Request) { g.serveVirtualConn(w, r, a, TransportWebSocket) })
	} else {
		mux.HandleFunc("/mcp", g.handleMCPRoot)
	}
	mux.HandleFunc("GET /sse/{name}", g.handleSSE)
	mux.Handle("POST /sse/{name}/message", g.limitBodies(http.HandlerFunc(g.handleSSEMessage)))
	mux.HandleFunc("GET /ws/{name}", g.handleWS)
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("GET /readyz", g.handleReady)
	for pattern, h := range g.opts.Mount {
		// What is mounted (the A2A gateway) takes request bodies too: in
		// the same budget and at the same pace as the MCP routes'.
		mux.Handle(pattern, g.limitBodies(h))
	}
	return g.checkHostOrigin(g.withClientAddr(g.stallGuard(mux)))
}

// withClientAddr puts the request's client address in its context
// (intercept.WithClientAddr), the peer's or, from a trusted proxy, the
// client's it forwards for: the session and body limits count it, and
// the approval store and rate limits bound what the unauthenticated
// calls of one address may hold, since their agents are whatever names
// the client gives.
func (g *Gateway) withClientAddr(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		addr := throttle.Behind(r.RemoteAddr, r.Header.Values("X-Forwarded-For"), g.opts.TrustedProxies)
		next.ServeHTTP(w, r.WithContext(intercept.WithClientAddr(r.Context(), addr)))
	})
}

// handleMCPRoot answers /mcp when no virtual server is served there: a
// client sent to it (the MCP Inspector's CLI posts to the /mcp of a URL
// such as /mcp/demo) is told where the routes and virtual servers are.
func (g *Gateway) handleMCPRoot(w http.ResponseWriter, _ *http.Request) {
	names := slices.AppendSeq(slices.Collect(maps.Keys(g.routes)), maps.Keys(g.virtual))
	slices.Sort(names)
	if len(names) == 0 {
		writeJSONRPCError(w, http.StatusNotFound, nil, &intercept.WireError{Code: intercept.CodeInvalidRequest,
			Message: "nothing is served at /mcp: the config has no upstreams"})
		return
	}
	var eg []string
	for _, n := range names[:min(len(names), 5)] {
		eg = append(eg, "/mcp/"+n)
	}
	if len(names) > len(eg) {
		eg = append(eg, "…")
	}
	writeJSONRPCError(w, http.StatusNotFound, nil, &intercept.WireError{Code: intercept.CodeInvalidRequest,
		Message: fmt.Sprintf("nothing is served at /mcp: each upstream is at /mcp/{name} (%s); add virtual_servers: [{}] to the config to serve them all at /mcp", strings.Join(eg, ", "))})
}

func (g *Gateway) lookupRoute(w http.ResponseWriter, r *http.Request) *route {
	rt := g.routes[r.PathValue("name")]
	if rt == nil {
		writeJSONRPCError(w, http.StatusNotFound, nil, &intercept.WireError{Code: intercept.CodeInvalidRequest,
			Message: fmt.Sprintf("no upstream named %q is configured", r.PathValue("name"))})
	}
	return rt
}

// Drain starts a graceful shutdown: server-to-client GET streams end now;
// calls in flight go on. Use it with http.Server.RegisterOnShutdown.
func (g *Gateway) Drain() { g.drainNow() }

// Close ends every session and waits for their goroutines.
func (g *Gateway) Close() error {
	g.cancel()
	for _, b := range g.stateless {
		b.close()
	}
	for _, s := range g.sessions.drain() {
		g.endSession(s)
	}
	g.ends.close(5 * time.Second)
	g.wg.Wait()
	for _, rt := range g.routes {
		if rt.client != nil {
			rt.client.CloseIdleConnections()
		}
	}
	return nil
}

// endSession releases what a session holds upstream.
func (g *Gateway) endSession(s *session) {
	// A sealed session on an HTTP upstream is only let go here (idle, or
	// this replica shutting down): its id brings it back, on this replica
	// or another, so what policy keeps under it (route memory, the
	// classifier's lifecycle) stays until the client's DELETE.
	adoptable := g.sealer != nil && s.upstreamID != ""
	if g.opts.OnSessionEnd != nil && !adoptable {
		g.opts.OnSessionEnd(telemetry.SessionRef(s.id))
	}
	if s.bridge != nil {
		s.bridge.close()
	}
	if s.upstreamID != "" && g.sealer == nil {
		// With sealed ids another replica may be serving this session
		// right now: an idle or shut-down replica lets go of its copy and
		// leaves the upstream session to the client's DELETE (or the
		// upstream's own expiry).
		if rt := g.routes[s.route]; rt != nil && rt.url != nil {
			g.ends.add(rt, s.upstreamID)
		}
	}
}

func (g *Gateway) deleteUpstreamSession(ctx context.Context, rt *route, upstreamID string) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodDelete, rt.url.String(), nil)
	if err != nil {
		return
	}
	req.Header.Set("Mcp-Session-Id", upstreamID)
	for k, v := range rt.up.Headers {
		req.Header.Set(k, v)
	}
	if resp, err := g.do(rt, req); err == nil {
		resp.Body.Close()
	}
}

// ServeConn governs one downstream session that arrives as a Conn (the
// stdio side of `sluice wrap`) against the named upstream, until either
// side ends or ctx is cancelled.
func (g *Gateway) ServeConn(ctx context.Context, upstream string, down transport.Conn) error {
	rt := g.routes[upstream]
	if rt == nil {
		return fmt.Errorf("gateway: no upstream named %q", upstream)
	}
	if g.opts.AgentHeaderRequired {
		down.Close()
		return ErrAgentHeaderRequired
	}
	return g.serveConn(ctx, rt, down, newSessionID(), "stdio", nil)
}

// kind names the downstream transport for spans: websocket, sse or stdio.
// opened is the HTTP request that opened the connection, nil for stdio.
func (g *Gateway) serveConn(ctx context.Context, rt *route, down transport.Conn, id, kind string, opened *http.Request) error {
	g.wg.Add(1)
	defer g.wg.Done()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := context.AfterFunc(g.ctx, cancel)
	defer stop()
	adm, _ := ctx.Value(admissionKey{}).(*admission) // nil for `sluice wrap`
	defer adm.release()
	var slot *childSlot
	if adm != nil {
		slot = adm.slot
	}
	up, err := rt.dialSession(ctx, slot, "") // a connection took its place when admitted
	if err != nil {
		g.log.Warn("upstream dial failed", "upstream", rt.up.Name, "err", err)
		// Answer what the client sends with an error naming the upstream
		// (or the limit) until it goes away, so nothing hangs.
		werr := upstreamError(rt.up.Name, err)
		if le, ok := asLimitError(err); ok {
			werr = le.wire()
		}
		failAll(ctx, down, werr)
		return err
	}
	rl := &relay{up: &rt.up, lister: rt.lister, ic: g.ic, budget: g.bodies, budgetKey: g.bodyKey(opened), log: g.log, withheld: g.withheld, session: id, down: down, upc: up, approver: g.opts.Approver,
		tracer: g.opts.Tracer, metrics: g.opts.Metrics, kind: kind, opened: opened, ident: g.ident, onRefused: g.opts.OnIdentityRefused}
	rl.ids.asIs = rl.sentAsIs
	if adm != nil {
		rl.lease = adm.lease.bindAgent
	}
	if kind != "stdio" {
		rl.idle = g.opts.idleTimeout() // sluice wrap's one client ends it itself
	}
	err = rl.run(ctx)
	g.log.Debug("session ended", "upstream", rt.up.Name, "session", telemetry.SessionRef(id), "err", err)
	if g.opts.OnSessionEnd != nil {
		g.opts.OnSessionEnd(telemetry.SessionRef(id)) // a connection is a session too: /ws, /sse, stdio
	}
	return err
}

// failAll answers every request read from c with err until c ends.
func failAll(ctx context.Context, c transport.Conn, err error) {
	defer c.Close()
	for {
		b, rerr := c.Read(ctx)
		if rerr != nil {
			return
		}
		msgs, _, derr := intercept.Decode(b)
		if derr != nil {
			_ = c.Write(ctx, intercept.ErrorResponse(nil, derr))
			continue
		}
		for _, m := range msgs {
			if m.Kind == intercept.KindRequest {
				_ = c.Write(ctx, intercept.ErrorResponse(m.ID, err))
			}
		}
	}
}

// refusedOwner is the SSE owner of a request identify refuses: no
// session's (a header's value holds no NUL; a virtual server's owner is
// one NUL between principal and header), so such a request is never
// taken for the owner of a session opened naming no agent, "". Handlers
// refuse it with identify's error (Gateway.identified) before.
const refusedOwner = "\x00\x00refused"

// openedKey carries the GET that opens an SSE session to its OnSession.
type openedKey struct{}

func (g *Gateway) handleSSE(w http.ResponseWriter, r *http.Request) {
	if a := g.virtual[r.PathValue("name")]; a != nil && r.PathValue("name") != "" {
		g.serveVirtualConn(w, r, a, TransportSSE)
		return
	}
	rt := g.lookupRoute(w, r)
	if rt == nil || !g.identified(w, r) {
		return
	}
	adm, ok := g.admitConn(w, r, rt, TransportSSE)
	if !ok {
		return
	}
	defer adm.release() // also when the stream ends before its session starts
	ctx := context.WithValue(context.WithValue(r.Context(), admissionKey{}, adm), openedKey{}, r)
	g.sse[rt.up.Name].ServeHTTP(w, r.WithContext(ctx))
}

func (g *Gateway) handleSSEMessage(w http.ResponseWriter, r *http.Request) {
	if a := g.virtual[r.PathValue("name")]; a != nil && r.PathValue("name") != "" {
		if g.identified(w, r) {
			a.sse.HandleMessage(w, r)
		}
		return
	}
	if rt := g.lookupRoute(w, r); rt != nil && g.identified(w, r) {
		g.sse[rt.up.Name].HandleMessage(w, r)
	}
}

func (g *Gateway) handleWS(w http.ResponseWriter, r *http.Request) {
	if a := g.virtual[r.PathValue("name")]; a != nil && r.PathValue("name") != "" {
		g.serveVirtualConn(w, r, a, TransportWebSocket)
		return
	}
	rt := g.lookupRoute(w, r)
	if rt == nil || !g.identified(w, r) {
		return
	}
	adm, ok := g.admitConn(w, r, rt, TransportWebSocket)
	if !ok {
		return
	}
	defer adm.release()
	c, err := transport.AcceptWS(w, r, g.wsAcceptOptions(r))
	if err != nil {
		return // AcceptWS has answered
	}
	g.serveConn(context.WithValue(r.Context(), admissionKey{}, adm), rt, c, newSessionID(), "websocket", r)
}

// wsAcceptOptions are the options of every /ws connection: the gateway's
// Origin check, and a message from the client bounded like a request
// body: each at most max_body_bytes, held within max_inflight_body_bytes
// with the request bodies while it is read, and paced like one.
func (g *Gateway) wsAcceptOptions(r *http.Request) *transport.WSAcceptOptions {
	return &transport.WSAcceptOptions{
		CheckOrigin:     func(r *http.Request) bool { return g.originAllowed(r) },
		MaxMessageBytes: g.opts.maxBody(),
		Budget:          wsBudget{g.bodies, g.bodyKey(r)},
		PaceGrace:       bodyGrace,
		PaceRate:        bodyRate,
		WriteStall:      g.opts.writeStallTimeout(),
	}
}

// wsBudget holds /ws messages in the request bodies' budget, waiting for
// room as long as a POST would.
type wsBudget struct {
	b   *byteBudget
	key string // the client's (bodyKey)
}

func (w wsBudget) Acquire(ctx context.Context, n int64) error {
	return w.b.acquireWithin(ctx, w.key, n, bodyWait)
}

func (w wsBudget) Release(n int64) { w.b.release(w.key, n) }

// identified answers a request whose identity cannot be read (a required
// agent header missing) with 400 and reports false.
func (g *Gateway) identified(w http.ResponseWriter, r *http.Request) bool {
	if _, err := g.ident.identify(r, nil); err != nil {
		writeJSONRPCError(w, http.StatusBadRequest, nil, err)
		return false
	}
	return true
}

// Ready checks that every upstream can be reached: HTTP upstreams answer
// at all, stdio commands can be found.
func (g *Gateway) Ready(ctx context.Context) map[string]error {
	out := make(map[string]error, len(g.routes))
	for name, rt := range g.routes {
		out[name] = g.probe(ctx, rt)
	}
	return out
}

func (g *Gateway) probe(ctx context.Context, rt *route) error {
	switch rt.up.Transport {
	case TransportStdio:
		_, err := exec.LookPath(rt.up.Command)
		return err
	default:
		u, err := url.Parse(rt.up.URL)
		if err != nil {
			return err
		}
		host := u.Host
		if u.Port() == "" {
			host = net.JoinHostPort(u.Hostname(), map[string]string{"https": "443", "wss": "443"}[u.Scheme]+map[string]string{"http": "80", "ws": "80"}[u.Scheme])
		}
		var d net.Dialer
		c, err := d.DialContext(ctx, "tcp", host)
		if err != nil {
			return err
		}
		return c.Close()
	}
}

func (g *Gateway) handleReady(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 3*time.Second)
	defer cancel()
	res := g.Ready(ctx)
	status := http.StatusOK
	var b strings.Builder
	for name, err := range res {
		if err != nil {
			status = http.StatusServiceUnavailable
			fmt.Fprintf(&b, "%s: %v\n", name, err)
		} else {
			fmt.Fprintf(&b, "%s: ok\n", name)
		}
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(status)
	fmt.Fprint(w, b.String())
}
