package gateway

import (
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"time"

	"github.com/sluicehq/sluice/gateway/credential"
	"github.com/sluicehq/sluice/telemetry"
)

// Transport names an MCP transport.
type Transport string

const (
	TransportStreamableHTTP Transport = "streamable-http"
	TransportSSE            Transport = "sse"
	TransportStdio          Transport = "stdio"
	TransportWebSocket      Transport = "websocket"
)

// Upstream is one MCP server behind the gateway. It is served downstream at
// /mcp/{Name}, /sse/{Name} and /ws/{Name}.
type Upstream struct {
	// Name is the route segment; letters, digits, '-', '_' and '.'.
	Name string `yaml:"name"`
	// Transport is how Sluice reaches the upstream. Zero means
	// streamable-http when URL is set and stdio when Command is set.
	Transport Transport `yaml:"transport"`
	// URL of an HTTP, SSE or WebSocket upstream.
	URL string `yaml:"url"`
	// Headers are added to every request to an HTTP upstream.
	Headers map[string]string `yaml:"headers"`
	// PassHeaders are client headers a streamable-http upstream gets, as
	// the client sent them, even while a route rule closes it to that
	// client, when every other header of the client's but the protocol's
	// own is dropped (see the README's carries). Nil passes none then;
	// an upstream not closed gets the client's headers whatever it says.
	// Hop-by-hop headers, Authorization and the headers the gateway
	// writes are never passed.
	PassHeaders []string `yaml:"pass_headers"`
	// OAuth, if set, gets an access token with the OAuth 2.0 client
	// credentials grant and sends it as Authorization: Bearer on every
	// request to the upstream (streamable-http and sse only), refreshed
	// before it expires. Nil sends none.
	OAuth *credential.ClientCredentialsConfig `yaml:"oauth"`
	// Command, Args and Env start a stdio upstream. Of the gateway's own
	// environment the server inherits only HOME, LOGNAME, PATH, SHELL,
	// TERM and USER (the set the official MCP SDKs' stdio clients pass;
	// transport.DefaultInheritedEnv) and what InheritEnv names; Env is
	// added to that, replacing an inherited variable of the same name.
	Command string            `yaml:"command"`
	Args    []string          `yaml:"args"`
	Env     map[string]string `yaml:"env"`
	// InheritEnv names more of the gateway's environment variables a
	// stdio upstream inherits: NAME, or PREFIX* for every name that
	// starts with PREFIX ("*" alone for the whole environment). A
	// pattern never matches a name in WithholdEnv, nor one starting with
	// SLUICE_; a NAME given in full does. Nil inherits only the default
	// set. Only for stdio upstreams.
	InheritEnv []string `yaml:"inherit_env"`
	// WithholdEnv names environment variables that are the gateway's
	// own, such as those its config's ${VAR}s read: a pattern in
	// InheritEnv does not pass them. Set by the sluice command, not in
	// the config file.
	WithholdEnv []string `yaml:"-"`
	// MaxChildren bounds the processes a stdio upstream's sessions run:
	// each session before MCP 2026-07-28 (Streamable HTTP, /sse, /ws) has
	// a child of its own, and a new session over the bound is refused
	// with 503 and Retry-After. 2026-07-28 requests share one more child.
	// Zero means 16. Only for stdio upstreams.
	MaxChildren int `yaml:"max_children"`

	// described is target's answer, computed when the route is built.
	described string
}

func (u *Upstream) maxChildren() int {
	if u.MaxChildren > 0 {
		return u.MaxChildren
	}
	return 16
}

func (u *Upstream) target() string {
	if u.described != "" {
		return u.described
	}
	return u.describe()
}

// describe computes target (once, by newRoute).
func (u *Upstream) describe() string {
	if u.URL != "" {
		// What every call's descriptor carries into policy, the
		// classifier (an LLM provider too) and the audit store: without
		// the operator's credentials in userinfo or query string.
		if p, err := url.Parse(u.URL); err == nil {
			p.User, p.RawQuery, p.ForceQuery, p.Fragment, p.RawFragment = nil, "", false, "", ""
			return p.String()
		}
		return "(upstream URL)"
	}
	return "stdio:" + telemetry.Scrub(strings.Join(append([]string{u.Command}, u.Args...), " "))
}

// Options configure a Gateway. The zero value of every field means the
// documented default.
type Options struct {
	Upstreams []Upstream
	// VirtualServers merge upstreams behind one endpoint each: the unnamed
	// one at /mcp, named ones at /mcp/{name} (see VirtualServer).
	VirtualServers []VirtualServer
	// OnAggregateDropped, if set, hears of an upstream (or one of its
	// tools or prompts) a virtual server left out of a list: the upstream
	// failed, or a name was taken. virtual is "" for /mcp.
	OnAggregateDropped func(virtual, upstream, why string)
	// Mount serves more handlers on the agents' listener, behind the same
	// Host and Origin checks: pattern -> handler, as http.ServeMux takes
	// them (the A2A gateway mounts "/a2a/").
	Mount map[string]http.Handler
	// MaxBodyBytes limits a request body, and every message from a
	// client: a /ws message (a longer one closes the connection with
	// status 1009) and an /sse POST (413). Zero means
	// DefaultMaxBodyBytes. A Conn given to ServeConn brings its own
	// limit; `sluice wrap` gives its stdio this one.
	MaxBodyBytes int64
	// MaxAnswerBytes bounds every message from an upstream, which the
	// gateway reads whole to screen before passing it on: an HTTP
	// upstream's JSON answer to a POST, the data of one event of its
	// event stream, a stdio upstream's line, a WebSocket upstream's
	// message. A longer one is not passed on (counted as withheld,
	// reason too_large), and the requests waiting for it get a JSON-RPC
	// error naming the limit; past a stream's event, stdio line or
	// WebSocket message the stream cannot be read on, so it ends (a
	// stdio upstream is restarted). Zero means DefaultMaxAnswerBytes.
	MaxAnswerBytes int64
	// AllowedHosts are Host header values accepted in addition to the
	// loopback names, which are always accepted when the listener is on
	// loopback. "*" accepts any host (DNS-rebinding protection off).
	AllowedHosts []string
	// AllowedOrigins are Origin header values accepted besides loopback
	// origins. "*" accepts any origin.
	AllowedOrigins []string
	// SessionIdleTimeout ends sessions unused for this long: with no
	// request in flight (nor a call held for approval), counted from the
	// end of the last. Zero means 30m.
	SessionIdleTimeout time.Duration
	// WriteStallTimeout bounds how long one write of an answer to a
	// client (a JSON body, an event of an SSE stream, its flush) may make
	// no progress: a client that keeps its socket open without reading
	// has the write fail after it, and the response end, so that the
	// request is done and its session can go idle. A stream with nothing
	// to write (an idle GET stream) is not cut for it: only a write that
	// is stuck is. A /ws message is bounded the same way, and a write
	// stalled on it closes the connection, and so is a write to a
	// websocket upstream, a stall of which ends its session, and a POST
	// to a legacy sse upstream. Zero means
	// DefaultWriteStallTimeout.
	WriteStallTimeout time.Duration
	// SessionKeys, if set, seal the session ids of 2025-era sessions
	// (AES-256-GCM, 32 bytes each) so that any replica holding the same
	// keys serves any request of a session on an HTTP upstream: the first
	// key seals, every key opens (rotate by putting the new key first and
	// keeping the old one until its sessions are gone). See sealed.go.
	SessionKeys [][]byte
	// SessionMaxAge bounds how long after initialize a sealed session id
	// (SessionKeys) is served: each id carries its issue time, and past
	// it every replica answers 404 (the session expired: the client
	// starts a new one), whatever its use. Zero means 24 hours; negative,
	// no bound (an id is good until its key is rotated out). Unsealed
	// sessions live in one replica's memory and end idle.
	SessionMaxAge time.Duration
	// Exchanges, if set, shares between the replicas serving a sealed
	// session (SessionKeys) what its exchanges leave for one another: the
	// ids its open requests wait on (a request reusing one is refused on
	// every replica) and the requests whose answer stream broke off (a
	// result a resumed GET stream replays is screened on any replica).
	// A store that does not answer refuses the request, or withholds the
	// result. Nil: both are kept by each replica (replay.go), and a
	// resumed stream through another replica has its results withheld.
	// See replayshare.go. One that is also a SessionEnds records the
	// sealed sessions their clients ended (DELETE), which no replica then
	// serves again (sessionends.go); without it only the replica that
	// took the DELETE refuses the id.
	Exchanges ExchangeStore
	// SessionEnds, if set, records the sealed sessions their clients
	// ended where it outlives this process (a file in the data
	// directory), so that a restart with the same SessionKeys does not
	// serve them again; nil: Exchanges's, if it is one. See
	// sessionends.go.
	SessionEnds SessionEnds
	// MaxSessions bounds the open downstream sessions: Streamable HTTP
	// sessions and /sse and /ws connections. Zero means 10000. A new
	// session beyond it gets 503 with Retry-After.
	MaxSessions int
	// MaxSessionsPerAgent bounds the sessions of one agent (the agent
	// header, else the clientInfo name at initialize); a new one beyond
	// it gets 429 with Retry-After and the agent's other sessions go on.
	// Sessions whose agent is not named count only against the other
	// limits. Zero means a tenth of MaxSessions (at least 1).
	MaxSessionsPerAgent int
	// MaxSessionsPerClient bounds the sessions opened from one client
	// address (the peer's IP; an IPv6 /64; from a trusted proxy, the
	// client it forwards for), with 429 beyond it. Zero means a tenth of
	// MaxSessions (at least 1).
	MaxSessionsPerClient int
	// TrustedProxies are the reverse proxies in front of the gateway. A
	// request from one counts as the client its X-Forwarded-For names
	// last that is not itself one of them (throttle.Behind), for every
	// per-client bound: sessions, request bodies held, and the rate limits
	// and held calls of unauthenticated clients. From anyone else the
	// header is ignored. Empty: every request is its peer's.
	TrustedProxies []netip.Prefix
	// MaxInflightBodyBytes bounds the request body bytes the gateway holds
	// at once, across every client: a POST whose body does not fit waits
	// up to 2s, then gets 503 with Retry-After. It must be at least
	// MaxBodyBytes. Zero means 16 × MaxBodyBytes (64 MiB by default).
	MaxInflightBodyBytes int64
	// Tracer, if set, gets a server span per client request that is not
	// part of a batch (the OTel MCP conventions), parented to the W3C trace
	// context from params._meta or headers, with a policy child span and,
	// when the request is forwarded, an upstream client span that ends
	// with its response. The client span's trace context goes on to the
	// upstream in params._meta (and in headers to HTTP upstreams), so the
	// upstream's span is its child. Nil: no tracing.
	Tracer telemetry.Tracer
	// Metrics, if set, gets an Upstream measurement per call forwarded to
	// an upstream, on every path: the time until its response (for an
	// HTTP upstream, until the answer is complete), with an error for a
	// transport failure, an HTTP 5xx, a JSON-RPC error response, or a
	// call the client cancelled or left. A POST to an HTTP upstream
	// counts once, batch or not; over other upstreams each request
	// counts. Nil: no metrics.
	Metrics telemetry.Metrics
	// OnSessionEnd, if set, is called when a downstream session ends: a
	// Streamable HTTP session (DELETE, idle timeout, upstream gone,
	// shutdown) or a /ws, /sse or stdio connection (either side closed),
	// e.g. to revoke the session's classifier identity and drop its
	// session-scoped route memory. It must not block. It is told the
	// session's reference (telemetry.SessionRef), as the interceptor
	// is (CallContext.SessionID): a session id is a credential, and is
	// recorded nowhere else than the gateway's own table.
	OnSessionEnd func(sessionID string)
	// AgentHeader, if set, names a request header whose value identifies
	// the agent, taking precedence over the client's self-reported name,
	// on every transport: on the POST that starts a session, the
	// WebSocket upgrade, the GET that opens an SSE stream (every POST to
	// its message endpoint must carry the same value), and each
	// 2026-07-28 request. A session id used with another value is
	// unknown (404). Empty: agents are known by the names their clients
	// give. See identity.go.
	AgentHeader string
	// AgentHeaderRequired refuses requests without the AgentHeader
	// header (400 with a JSON-RPC error naming it) on every transport;
	// [Gateway.ServeConn] (stdio, no headers) then fails with
	// [ErrAgentHeaderRequired]. It needs AgentHeader. False: requests
	// without it are identified by the client's name.
	AgentHeaderRequired bool
	// Approver, if set, lets clients answer held tools/calls themselves
	// (an opt-in: where the client is the agent, that is the agent
	// approving its own call): a client that can elicit form input from
	// its user is asked to approve the exact call, over an SSE
	// elicitation/create request (sessions before 2026-07-28) or an
	// input_required result with a sealed requestState (2026-07-28, if
	// the Approver can seal states, as approval.Store does). Nil answers
	// held calls with approval_required only, for an operator to decide,
	// and refuses any inputResponses for the gateway's question. See
	// approve.go.
	Approver Approver
	// OnIdentityRefused, if set, is called for each request refused
	// because of who it claims to be: another principal's or agent's
	// session or connection (answered 404 on /mcp and /sse, a JSON-RPC
	// error on a connection), a second initialize, another protocol
	// version. Such refusals are logged either way; the hook lets the
	// caller record them as events. It must return promptly. Nil: logged
	// only.
	OnIdentityRefused func(IdentityRefusal)

	// now, if set, is the sessions' clock (tests).
	now func() time.Time

	// holdRenew, if set, is how often a held call's shared record is
	// renewed (default holdRenew); tests shorten it.
	holdRenew time.Duration
}

// The limits that zero MaxBodyBytes and MaxAnswerBytes stand for.
const (
	DefaultMaxBodyBytes   = 4 << 20
	DefaultMaxAnswerBytes = 32 << 20
)

func (o *Options) maxBody() int64 {
	if o.MaxBodyBytes > 0 {
		return o.MaxBodyBytes
	}
	return DefaultMaxBodyBytes
}

func (o *Options) maxAnswer() int64 {
	if o.MaxAnswerBytes > 0 {
		return o.MaxAnswerBytes
	}
	return DefaultMaxAnswerBytes
}

func (o *Options) idleTimeout() time.Duration {
	if o.SessionIdleTimeout > 0 {
		return o.SessionIdleTimeout
	}
	return 30 * time.Minute
}

// DefaultWriteStallTimeout is what a zero WriteStallTimeout stands for.
const DefaultWriteStallTimeout = 30 * time.Second

func (o *Options) writeStallTimeout() time.Duration {
	if o.WriteStallTimeout > 0 {
		return o.WriteStallTimeout
	}
	return DefaultWriteStallTimeout
}

// DefaultSessionMaxAge is what a zero SessionMaxAge stands for.
const DefaultSessionMaxAge = 24 * time.Hour

func (o *Options) sessionMaxAge() time.Duration {
	switch {
	case o.SessionMaxAge < 0:
		return 0
	case o.SessionMaxAge == 0:
		return DefaultSessionMaxAge
	}
	return o.SessionMaxAge
}

func (o *Options) maxSessions() int {
	if o.MaxSessions > 0 {
		return o.MaxSessions
	}
	return 10000
}

func (o *Options) maxSessionsPerAgent() int {
	if o.MaxSessionsPerAgent > 0 {
		return o.MaxSessionsPerAgent
	}
	return max(1, o.maxSessions()/10)
}

func (o *Options) maxSessionsPerClient() int {
	if o.MaxSessionsPerClient > 0 {
		return o.MaxSessionsPerClient
	}
	return max(1, o.maxSessions()/10)
}

func (o *Options) maxInflightBody() int64 {
	if o.MaxInflightBodyBytes > 0 {
		return max(o.MaxInflightBodyBytes, o.maxBody())
	}
	return 16 * o.maxBody()
}
