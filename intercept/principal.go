package intercept

import (
	"context"
	"errors"
	"time"
)

// Principal is an authenticated caller: who presented a valid credential
// on the agents' listener (package auth), or on the admin listener an
// operator proven by an admin JWT. When an agent's request carries one, it
// is the agent: route memory, manifests, approvals and events are keyed
// by ID, whatever name the client gives itself. A Principal is built once
// per request and not changed afterwards, so it may be read concurrently.
type Principal struct {
	// ID names the agent: the API key's agent, the JWT claim named by
	// agent_claim (sub by default), or the client certificate's SAN URI
	// or CN.
	ID string `json:"id"`
	// Method is how it was authenticated: api_key, jwt or mtls.
	Method string `json:"method"`
	// ClientName is the name the client gives itself (clientInfo.name),
	// kept as a separate attribute when known; it names nothing.
	ClientName string `json:"client_name,omitempty"`
	// Claims are the attributes of the credential policy may read as
	// principal.claims: a JWT's claims (azp, client_id, act, scope, …),
	// an API key's id, a certificate's subject. Nil means none.
	Claims map[string]any `json:"claims,omitempty"`
	// Check, if set, reports why the credential no longer holds (an API
	// key revoked or expired since, a token past its exp), or nil (see
	// Gone): a connection that outlives the request that opened it (/ws,
	// /sse) asks it before each message it takes from the client and
	// passes on, a stream before each event, the Interceptor before each
	// decision (a held call's comes when the wait ends).
	// An error wrapping ErrUncheckable says it cannot tell now (the key
	// file unreadable), not that the credential lapsed.
	Check func() error `json:"-"`
	// Expires is when the credential stops holding (a JWT's exp); zero
	// means it has no expiry of its own.
	Expires time.Time `json:"-"`
	// SigningKey names the key a JWT was verified with (its SHA-256 and
	// kid, as package auth makes it): how a process that holds only a
	// record of the credential (another replica's A2A push relay) asks
	// whether the issuer still publishes the key. Empty for other
	// methods.
	SigningKey string `json:"-"`
}

// ErrUncheckable is wrapped by a Principal's Check that cannot tell now
// whether the credential holds (the key file it reads is unreadable):
// what can be refused and tried again is, what would be undone for good
// (a push relay ended) is not.
var ErrUncheckable = errors.New("the credential cannot be checked now")

// Gone is the error a call, connection or stream of p gets once p's
// credential no longer holds (Check), or nil: p is nil (no credential to
// lose), has no Check, or still holds. A connection or a stream outlives
// the request that authenticated it, so what the upstream sends it is not
// passed on past that point either (an agent that sends nothing would
// otherwise go on reading), and a call held for approval is not sent.
func (p *Principal) Gone() error {
	if p == nil || p.Check == nil {
		return nil
	}
	if err := p.Check(); err != nil {
		return &WireError{Code: CodeInvalidRequest,
			Message: "the credential this was authenticated with no longer holds (" + err.Error() + "): nothing more is sent or passed on for it; authenticate again with a valid credential"}
	}
	return nil
}

type principalKey struct{}

// WithPrincipal returns ctx carrying p. A nil p returns ctx unchanged.
func WithPrincipal(ctx context.Context, p *Principal) context.Context {
	if p == nil {
		return ctx
	}
	return context.WithValue(ctx, principalKey{}, p)
}

// PrincipalFrom returns the principal ctx carries, or nil when the request
// was not authenticated (no auth: section, or `sluice wrap`).
func PrincipalFrom(ctx context.Context) *Principal {
	p, _ := ctx.Value(principalKey{}).(*Principal)
	return p
}

type clientAddrKey struct{}

// WithClientAddr returns ctx carrying addr, the network address a call
// came from as bounds count it (an IP; an IPv6 /64), for deciders that
// bound what unauthenticated clients may hold: without authentication
// an agent is the name the client gives, and a client can give a new
// one at each call, but not a new address.
func WithClientAddr(ctx context.Context, addr string) context.Context {
	return context.WithValue(ctx, clientAddrKey{}, addr)
}

// ClientAddrFrom returns the address [WithClientAddr] put in ctx, or ""
// (stdio; a call the gateway makes itself).
func ClientAddrFrom(ctx context.Context) string {
	a, _ := ctx.Value(clientAddrKey{}).(string)
	return a
}
