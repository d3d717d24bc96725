package gateway

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/sluicehq/sluice/intercept"
)

// Who a request comes from.
//
// A session (Streamable HTTP, 2025 eras) and a connection (/ws, /sse,
// `sluice wrap`'s stdio) belong to one principal, fixed when they start
// and never changed afterwards:
//
//   - the value of the agent header (Options.AgentHeader) on the request
//     that started it (the initialize POST, the WebSocket upgrade, the SSE
//     GET), which is then also the agent;
//   - without one, the client's own name: initialize's clientInfo.name, or
//     io.modelcontextprotocol/clientInfo in the _meta of a connection's
//     first 2026-07-28 request.
//
// A later request must carry the same header value and, unless the header
// named the agent, no other client name, or it is refused: as an unknown
// session on Streamable HTTP (404, so a session id seen by someone else is
// of no use to them), with a -32600 error on a connection. Nor can it
// initialize again or declare another protocol version in _meta. A
// 2026-07-28 request outside any session is identified on its own, the
// header taking precedence over _meta.

// ErrAgentHeaderRequired is returned by [Gateway.ServeConn] when
// Options.AgentHeaderRequired is set: a stdio connection carries no
// headers, so no request on it could ever be admitted.
var ErrAgentHeaderRequired = errors.New("gateway: the agent header is required (AgentHeaderRequired), but a stdio connection carries no headers")

// principal is who a session or a connection belongs to.
type principal struct {
	header string // the agent header's value on the request that started it; "" when absent or none is configured
	agent  string // the agent policy knows: the header's value when there is one, else the client's own name
	client string // the client's own name on the request that started it, if it gave one
}

// claim is what a request says about who sends it.
type claim struct {
	header        string // the authenticated principal's id, else the agent header's value; "" when absent or none is configured
	authenticated bool   // header is the authenticated principal's id (principal.go), not a header's value
	client        string // the client's own name, from initialize or _meta; "" when it gives none
	version       string // the protocol version its _meta declares; "" for none
	initialize    bool   // it holds an initialize request
	requests      bool   // it holds a request at all (notifications and responses claim nothing)
}

// principal is the principal a session or connection started by c gets.
func (c claim) principal() principal {
	if c.header != "" {
		return principal{header: c.header, agent: c.header, client: c.client}
	}
	return principal{agent: c.client, client: c.client}
}

// identifier reads claims from requests, per Options.AgentHeader and
// Options.AgentHeaderRequired.
type identifier struct {
	header   string
	required bool
}

// identify is the one place that reads who a request is from: r is the
// HTTP request that carried msgs or, for /ws and /sse, opened their
// connection (nil for stdio); msgs are the messages it carries (none for
// a GET or DELETE). The client's name and protocol version are read from
// requests only. An authenticated principal (API key, JWT, mTLS: the
// auth middleware puts it in the request's context) stands in for the
// header, and wins over it.
func (id identifier) identify(r *http.Request, msgs []*intercept.Message) (claim, error) {
	var c claim
	if r != nil {
		if p, ok := principalAgent(r.Context()); ok {
			// Authenticated: the principal is who the request is from,
			// whatever a header or the client says.
			c.header, c.authenticated = p, true
		}
	}
	if id.header != "" && r != nil {
		if k := otherSpelling(r.Header, id.header); k != "" {
			// Authenticated or not: the gateway writes the header it
			// names the agent in, not this one, which goes on as sent.
			return c, invalid(fmt.Sprintf("the %s header is another spelling of %s, which names the agent and some read it as (CGI, WSGI, nginx); send %s alone", k, id.header, id.header))
		}
	}
	if id.header != "" && r != nil && !c.authenticated {
		vs := r.Header.Values(id.header)
		if len(vs) > 1 {
			return c, invalid(fmt.Sprintf("the %s header names the agent and must appear once; it appears %d times", id.header, len(vs)))
		}
		if len(vs) == 1 {
			c.header = vs[0]
		}
	}
	if id.required && c.header == "" && !c.authenticated {
		return c, invalid(fmt.Sprintf("the %s header is required: it names the agent making the request", id.header))
	}
	for _, m := range msgs {
		if m.Kind != intercept.KindRequest {
			continue
		}
		c.requests = true
		version, name := m.MetaVersion()
		if m.Method == "initialize" {
			c.initialize = true
			if err := c.claimClient(clientNameFromInitialize(m.Params)); err != nil {
				return c, err
			}
		}
		if err := c.claimClient(name); err != nil {
			return c, err
		}
		if version != "" {
			if c.version != "" && version != c.version {
				return c, invalid("the requests declare different protocol versions in _meta")
			}
			c.version = version
		}
	}
	return c, nil
}

func (c *claim) claimClient(name string) error {
	if name == "" {
		return nil
	}
	if c.client != "" && name != c.client {
		return invalid(fmt.Sprintf("the requests name different clients, %q and %q", c.client, name))
	}
	c.client = name
	return nil
}

// admits reports whether a request claiming c may use a session or
// connection p owns: the same agent header value (or none both times)
// and, unless the header named the agent, no other client name.
// clientName is the client's own name when something else names the
// agent (the agent header or an authenticated principal): the
// descriptor's ClientName, policy's principal.client_name. "" otherwise.
func (p principal) clientName() string {
	if p.header == "" {
		return ""
	}
	return p.client
}

func (p principal) admits(c claim) bool {
	if c.header != p.header {
		return false
	}
	return p.header != "" || c.client == "" || c.client == p.agent
}

// continues returns why a request claiming c cannot continue a session or
// connection that has started with protocol version (as far as known), or
// nil: initialize starts one, and the version it negotiated stays.
func (c claim) continues(version string) error {
	if c.initialize {
		return invalid("this session is already initialized; start a new session to initialize again")
	}
	if c.version != "" && c.version != version {
		return invalid(fmt.Sprintf("the protocol version of a session cannot change: this session uses %s, the request declares %s in _meta",
			orUnknown(version), c.version))
	}
	return nil
}

// otherAgent is the error for a request on a connection that claims
// another agent than the one the connection belongs to.
func otherAgent(p principal) error {
	return invalid(fmt.Sprintf("the agent of a session cannot change: this session belongs to %q", p.agent))
}

func invalid(msg string) error {
	return &intercept.WireError{Code: intercept.CodeInvalidRequest, Message: "invalid request: " + msg}
}

// session returns the session id on rt if a request claiming c may use
// it, or nil: unknown, on another route, or another agent's.
//
// A sealed id this replica has not seen (sealed.go) is adopted; err is
// what to answer when it cannot be (limits, or a session bound to another
// replica).
func (g *Gateway) session(ctx context.Context, id string, rt *route, c claim, client string) (*session, error) {
	if g.sealer != nil && g.sealer.expired(id) {
		return nil, g.expire(id)
	}
	s := g.sessions.get(id, rt.up.Name)
	if s == nil {
		if other := g.sessions.find(id); other != nil {
			// The id could only have been seen on another route.
			g.refusals().refused("streamable-http", rt.up.Name, id, other.owner, c, errors.New("session opened on route "+other.route))
			return nil, nil
		}
		if g.sealer != nil {
			return g.adopt(ctx, id, rt, c, client)
		}
		return nil, nil
	}
	if !s.owner.admits(c) {
		g.refusals().refused("streamable-http", rt.up.Name, s.id, s.owner, c, errors.New("session of another agent"))
		return nil, nil
	}
	if g.shares(s) {
		// Its client may have ended it through another replica
		// (sessionends.go).
		if ended, err := g.ended(ctx, id, true); ended || err != nil {
			if ended && g.sessions.remove(id) != nil {
				g.endSession(s)
			}
			return nil, err
		}
	}
	return s, nil
}

// otherSpelling returns a name in h spelt with underscores that CGI,
// WSGI and nginx's $http_ variables read as header name k ("" for none).
func otherSpelling(h http.Header, k string) string {
	for n := range h {
		if strings.IndexByte(n, '_') >= 0 && cgiName(n) == cgiName(k) {
			return n
		}
	}
	return ""
}
