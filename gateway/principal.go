package gateway

import (
	"context"

	"github.com/sluicehq/sluice/intercept"
)

// credentialGone is why the principal that opened a connection (in ctx)
// may no longer act through it, or nil (intercept.Principal.Gone): the
// authentication middleware checked it once, at the upgrade; a
// connection lives on, so every message asks again.
func credentialGone(ctx context.Context) error { return intercept.PrincipalFrom(ctx).Gone() }

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
