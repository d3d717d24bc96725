package gateway

import (
	"strings"
	"time"

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
	// Command, Args and Env start a stdio upstream. Env adds to the
	// gateway's own environment.
	Command string            `yaml:"command"`
	Args    []string          `yaml:"args"`
	Env     map[string]string `yaml:"env"`
}

func (u *Upstream) target() string {
	if u.URL != "" {
		return u.URL
	}
	return "stdio:" + strings.Join(append([]string{u.Command}, u.Args...), " ")
}

// Options configure a Gateway. The zero value of every field means the
// documented default.
type Options struct {
	Upstreams []Upstream
	// MaxBodyBytes limits a request body. Zero means 4 MiB.
	MaxBodyBytes int64
	// AllowedHosts are Host header values accepted in addition to the
	// loopback names, which are always accepted when the listener is on
	// loopback. "*" accepts any host (DNS-rebinding protection off).
	AllowedHosts []string
	// AllowedOrigins are Origin header values accepted besides loopback
	// origins. "*" accepts any origin.
	AllowedOrigins []string
	// SessionIdleTimeout ends sessions unused for this long. Zero means 30m.
	SessionIdleTimeout time.Duration
	// MaxSessions bounds the session table. Zero means 10000.
	MaxSessions int
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
	// OnSessionEnd, if set, is called when a downstream session ends
	// (DELETE, idle timeout, upstream gone, shutdown), e.g. to revoke the
	// session's classifier identity. It must not block.
	OnSessionEnd func(sessionID string)
	// AgentHeader, if set, names a request header whose value identifies
	// the agent, taking precedence over the client's self-reported name.
	AgentHeader string
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
}

func (o *Options) maxBody() int64 {
	if o.MaxBodyBytes > 0 {
		return o.MaxBodyBytes
	}
	return 4 << 20
}

func (o *Options) idleTimeout() time.Duration {
	if o.SessionIdleTimeout > 0 {
		return o.SessionIdleTimeout
	}
	return 30 * time.Minute
}

func (o *Options) maxSessions() int {
	if o.MaxSessions > 0 {
		return o.MaxSessions
	}
	return 10000
}
