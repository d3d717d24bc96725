package gateway

import (
	"context"

	"github.com/sluicehq/sluice/intercept"
)

// credentialGone is why the principal that opened a connection (in ctx)
// may no longer act through it, or nil: its API key was revoked, its
// token or certificate expired (intercept.Principal.Check). The
// authentication middleware checked it once, at the upgrade; a
// connection lives on, so every message asks again.
func credentialGone(ctx context.Context) error { return principalGone(intercept.PrincipalFrom(ctx)) }

// principalGone is credentialGone of the principal p (nil: none), for a
// loop that looked it up once: what the upstream sends a connection is
// not passed on once its credential no longer holds either, or a revoked
// agent that sends nothing goes on reading (the results of its calls, the
// server's own requests with their data).
func principalGone(p *intercept.Principal) error {
	if p == nil || p.Check == nil {
		return nil
	}
	if err := p.Check(); err != nil {
		return &intercept.WireError{Code: intercept.CodeInvalidRequest,
			Message: "the credential this connection was opened with no longer holds (" + err.Error() + "); the connection is closed: open a new one with a valid credential"}
	}
	return nil
}

// principalAgent returns the ID of the authenticated principal ctx (a
// request's, or a /ws or /sse connection's) carries, put there by the
// authentication middleware in front of the gateway. When there is one it
// is the agent, over the agent header, initialize's clientInfo and _meta:
// a client can call itself anything, but it cannot choose whose rules,
// memory and sessions it gets.
func principalAgent(ctx context.Context) (string, bool) {
	if p := intercept.PrincipalFrom(ctx); p != nil {
		return p.ID, true
	}
	return "", false
}
