package gateway

import (
	"context"
	"time"

	"github.com/sluicehq/sluice/gateway/transport"
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

// credentialPoll is how often a connection whose client and upstream are
// quiet asks whether its principal's credential still holds. An API
// key's check reads the key file again at most once a second, shared by
// every connection; a JWT's looks its signing key up in the JWKS cache.
const credentialPoll = time.Second

// watchCredential calls lapsed, once, with why the credential of ctx's
// principal no longer holds, as soon as it stops holding: asked every
// credentialPoll and at its expiry (Principal.Expires). It returns when
// ctx ends, or at once when ctx carries no credential that can lapse. A
// connection asks before each message too, but a quiet one would
// otherwise stay open on a revoked key, its held calls with it.
func watchCredential(ctx context.Context, lapsed func(error)) {
	p := intercept.PrincipalFrom(ctx)
	if p == nil || p.Check == nil {
		return
	}
	t := time.NewTicker(credentialPoll)
	defer t.Stop()
	var expiry <-chan time.Time
	if !p.Expires.IsZero() {
		e := time.NewTimer(time.Until(p.Expires))
		defer e.Stop()
		expiry = e.C
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-expiry:
		}
		if err := p.Gone(); err != nil {
			lapsed(err)
			return
		}
	}
}

// lapsedReason is the reason of the close frame that ends a WebSocket
// whose credential no longer holds (the JSON-RPC error before it says
// more).
const lapsedReason = "the credential this connection was authenticated with no longer holds"

// statusCloser is a Conn that can close with a status and a reason its
// peer reads: a WebSocket's close frame.
type statusCloser interface {
	CloseWith(code int, reason string) error
}

// closeLapsed closes c, whose principal's credential no longer holds: a
// WebSocket with status 1008 (policy violation) and a reason saying why.
func closeLapsed(c transport.Conn) {
	if sc, ok := c.(statusCloser); ok {
		_ = sc.CloseWith(transport.StatusPolicyViolation, lapsedReason)
		return
	}
	_ = c.Close()
}
