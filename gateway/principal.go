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

// ownedBy reports whether a request with ctx may use s: with a principal,
// only the one whose request opened it may.
func (s *session) ownedBy(ctx context.Context) bool {
	id, ok := principalAgent(ctx)
	if !ok {
		return true
	}
	agent, _ := s.info()
	return agent == id
}
