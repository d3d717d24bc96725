package gateway

import (
	"log/slog"

	"github.com/sluicehq/sluice/telemetry"
)

// IdentityRefusal describes a request refused because of who it claims
// to be (identity.go): a session or connection presented by another
// principal or agent, or a client that tries to initialize it again or
// change its protocol version. See Options.OnIdentityRefused.
type IdentityRefusal struct {
	// Transport is the downstream transport: streamable-http, sse,
	// websocket or stdio.
	Transport string
	// Session is the reference (telemetry.SessionRef) of the session or
	// connection id the request presented: the id is a credential.
	Session string
	// Route is the upstream's name.
	Route string
	// Agent is the agent the session or connection belongs to.
	Agent string
	// Principal is the authenticated principal that sent the request;
	// "" when the request was not authenticated.
	Principal string
	// Claimed is the agent header's value or client name the request
	// claimed, where it differs from the session's; "" for none.
	Claimed string
	// Reason says why it was refused.
	Reason string
}

// refusals reports identity refusals: a warning in the log and, if set,
// the Options.OnIdentityRefused hook.
type refusals struct {
	log  *slog.Logger
	hook func(IdentityRefusal)
}

// refused reports a request claiming c refused on session (of transport
// kind, on route) that p owns, because of why: a client that does this
// is either broken or trying to walk out of its rules.
func (rf refusals) refused(kind, route, session string, p principal, c claim, why error) {
	session = telemetry.SessionRef(session)
	claimed := c.client
	if c.header != p.header {
		claimed = c.header
	}
	rf.log.Warn("request refused: the agent and protocol version of a session are fixed when it starts",
		"transport", kind, "session", session, "route", route, "agent", p.agent, "claimed", claimed, "err", why)
	if rf.hook == nil {
		return
	}
	ir := IdentityRefusal{Transport: kind, Session: session, Route: route, Agent: p.agent, Claimed: claimed, Reason: why.Error()}
	if c.authenticated {
		ir.Principal = c.header
	}
	rf.hook(ir)
}

func (g *Gateway) refusals() refusals {
	return refusals{g.log, g.opts.OnIdentityRefused}
}
