package gateway

import (
	"context"

	"github.com/sluicehq/sluice/intercept"
)

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
