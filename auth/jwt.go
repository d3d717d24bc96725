package auth

import (
	"context"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
	lru "github.com/hashicorp/golang-lru/v2"

	"github.com/sluicehq/sluice/intercept"
)

// JWTVerifier checks JWT bearer tokens against an issuer's JWKS. It is
// safe for concurrent use.
type JWTVerifier struct {
	cfg   JWTConfig
	algs  []jose.SignatureAlgorithm
	keys  *jwksCache
	now   func() time.Time
	claim string
	// audRoutes maps each configured audience to the route it names
	// (audienceRoute): a token counts on that route only, or everywhere
	// for an audience that names none ("").
	audRoutes map[string]string
	// verified remembers tokens whose signature and claims checked out,
	// by SHA-256: an agent sends the same token with every request, and
	// an ECDSA verification costs tens of microseconds where the hash
	// costs one. A hit is still refused once the token expires or its
	// key leaves the JWKS.
	verified *lru.Cache[[sha256.Size]byte, verifiedToken]
}

type verifiedToken struct {
	p   *intercept.Principal
	exp time.Time
	kid string
	key any // the public key that verified it
}

// verifiedTokens is how many verified tokens a verifier remembers.
const verifiedTokens = 4096

// NewJWTVerifier returns a verifier for cfg, which must have passed
// Config.Validate. client fetches the JWKS (nil: a client with a 10s
// timeout; a copy of it is used, whose redirects never leave https); now
// may be nil for time.Now.
func NewJWTVerifier(cfg JWTConfig, client *http.Client, now func() time.Time) *JWTVerifier {
	if now == nil {
		now = time.Now
	}
	c := http.Client{Timeout: 10 * time.Second}
	if client != nil {
		c = *client
	}
	c.CheckRedirect = jwksRedirect
	client = &c
	algNames := cfg.Algorithms
	if len(algNames) == 0 {
		algNames = DefaultAlgorithms
	}
	v := &JWTVerifier{cfg: cfg, now: now, claim: cfg.AgentClaim, audRoutes: make(map[string]string, len(cfg.Audience))}
	for _, a := range cfg.Audience {
		v.audRoutes[a] = audienceRoute(a)
	}
	for _, a := range algNames {
		v.algs = append(v.algs, jose.SignatureAlgorithm(a))
	}
	if v.claim == "" {
		v.claim = "sub"
	}
	if v.cfg.ClockSkew == 0 {
		v.cfg.ClockSkew = defaultClockSkew
	}
	ttl, minRefresh := cfg.JWKSCacheTTL, cfg.JWKSMinRefresh
	if ttl == 0 {
		ttl = defaultJWKSCacheTTL
	}
	if minRefresh == 0 {
		minRefresh = defaultJWKSMinRefresh
	}
	v.keys = &jwksCache{url: cfg.JWKSURL, client: client, ttl: ttl, minRefresh: minRefresh, now: now}
	v.verified, _ = lru.New[[sha256.Size]byte, verifiedToken](verifiedTokens) // fails only for a size <= 0
	return v
}

// jwksRedirect is the JWKS client's CheckRedirect: a redirect is followed
// as jwks_url itself is taken, to https or to plain http on a loopback
// host, and never from https to http: jwks_url must be https because keys
// fetched over plain http could be replaced in transit, and a redirect to
// http:// made them so.
func jwksRedirect(req *http.Request, via []*http.Request) error {
	switch u := req.URL; {
	case len(via) >= 10:
		return errors.New("stopped after 10 redirects")
	case u.Scheme == "https", u.Scheme == "http" && via[0].URL.Scheme == "http" && loopbackHost(u.Hostname()):
		return nil
	}
	u := *req.URL
	u.User, u.RawQuery, u.Fragment = nil, "", ""
	return fmt.Errorf("the JWKS redirected to %s, which is not followed: keys fetched over plain http could be replaced in transit", u.String())
}

// Warm fetches the JWKS once, so the first request does not wait for it.
func (v *JWTVerifier) Warm(ctx context.Context) error {
	_, err := v.keys.lookup(ctx, "")
	return err
}

// maxKeysTried bounds the signature checks one token costs: the keys of
// the set for its algorithm under its kid (every key, for a token without
// one). A token with more is refused before any is tried, every time, not
// tried against some at random: an unauthenticated caller cannot make a
// request cost more, and an issuer whose tokens carry no kid while its
// set holds more keys than this for their algorithm is told to set kid.
const maxKeysTried = 8

// Authenticate returns the principal of a JWT, or a *Failure.
func (v *JWTVerifier) Authenticate(ctx context.Context, token string) (*intercept.Principal, error) {
	sum := sha256.Sum256([]byte(token))
	if e, ok := v.verified.Get(sum); ok {
		if v.now().Add(-v.cfg.ClockSkew).Before(e.exp) && v.keys.hasKey(e.kid, e.key) {
			return e.p, nil
		}
		v.verified.Remove(sum)
	}
	e, err := v.verify(ctx, token)
	if err != nil {
		return nil, err
	}
	v.verified.Add(sum, e)
	return e.p, nil
}

func (v *JWTVerifier) verify(ctx context.Context, token string) (verifiedToken, error) {
	// ParseSigned refuses any algorithm not in v.algs before a key is
	// looked at: none and HS256 (the RSA public key used as an HMAC
	// secret) never get that far.
	tok, err := jwt.ParseSigned(token, v.algs)
	if err != nil {
		return verifiedToken{}, invalidToken(ModeJWT, "not a signed JWT with an accepted algorithm", err)
	}
	if len(tok.Headers) != 1 {
		return verifiedToken{}, invalidToken(ModeJWT, "a JWT must have exactly one signature", nil)
	}
	h := tok.Headers[0]
	keys, err := v.keys.lookup(ctx, h.KeyID)
	if err != nil {
		desc := "the issuer's signing keys cannot be fetched"
		if errors.Is(err, errUnknownKID) {
			desc = "no signing key matches the token's kid"
		}
		return verifiedToken{}, invalidToken(ModeJWT, desc, err)
	}
	var std jwt.Claims
	var all map[string]any
	var kid string
	var pub any
	for refetched := false; ; refetched = true {
		// The keys to try, at most one more than maxKeysTried: the set may
		// hold thousands, and this runs before the caller is known.
		var buf [maxKeysTried + 1]jose.JSONWebKey
		try := buf[:0]
		for _, k := range keys {
			if keyFor(k, h.Algorithm) {
				if try = append(try, k); len(try) > maxKeysTried {
					break
				}
			}
		}
		switch {
		case len(try) > maxKeysTried && h.KeyID == "":
			return verifiedToken{}, invalidToken(ModeJWT, fmt.Sprintf("the token has no kid, and the issuer publishes more than %d keys for %s, the most a token without one is tried against: the issuer must name its key (kid) in its tokens", maxKeysTried, h.Algorithm), nil)
		case len(try) > maxKeysTried:
			return verifiedToken{}, invalidToken(ModeJWT, fmt.Sprintf("the issuer publishes more than %d keys for %s under the token's kid, the most a token is tried against", maxKeysTried, h.Algorithm), nil)
		}
		verified := false
		for _, k := range try {
			if err = tok.Claims(k.Key, &std, &all); err == nil {
				verified, kid, pub = true, k.KeyID, k.Key
				break
			}
		}
		if verified {
			break
		}
		// A token that no key held verifies may be signed with a key the
		// issuer published since: a rotation, to a new kid (which an
		// unknown kid tells of), to none, or to new material under the
		// kid it had. The set is fetched again, at most once per
		// jwks_min_refresh however many ask, and the token tried against
		// the keys it now holds for its kid.
		if !refetched {
			if ks, ok := v.keys.replaced(ctx, h.KeyID, keys); ok {
				keys = ks
				continue
			}
		}
		if len(try) == 0 {
			return verifiedToken{}, invalidToken(ModeJWT, fmt.Sprintf("no signing key of the issuer's is for the token's algorithm %s", h.Algorithm), nil)
		}
		return verifiedToken{}, invalidToken(ModeJWT, "bad signature", err)
	}
	if std.Expiry == nil {
		return verifiedToken{}, invalidToken(ModeJWT, "the token has no exp", nil)
	}
	err = std.ValidateWithLeeway(jwt.Expected{Issuer: v.cfg.Issuer, AnyAudience: v.cfg.Audience, Time: v.now()}, v.cfg.ClockSkew)
	switch {
	case errors.Is(err, jwt.ErrInvalidIssuer):
		return verifiedToken{}, invalidToken(ModeJWT, "wrong issuer", err)
	case errors.Is(err, jwt.ErrInvalidAudience):
		return verifiedToken{}, invalidToken(ModeJWT, "the token's audience is not this gateway", err)
	case errors.Is(err, jwt.ErrExpired):
		return verifiedToken{}, invalidToken(ModeJWT, "the token expired", err)
	case errors.Is(err, jwt.ErrNotValidYet), errors.Is(err, jwt.ErrIssuedInTheFuture):
		return verifiedToken{}, invalidToken(ModeJWT, "the token is not valid yet", err)
	case err != nil:
		return verifiedToken{}, invalidToken(ModeJWT, "invalid claims", err)
	}
	id, _ := all[v.claim].(string)
	if id == "" {
		return verifiedToken{}, invalidToken(ModeJWT, fmt.Sprintf("the token has no %s claim to name the agent", v.claim), nil)
	}
	if !printableASCII(id) {
		// Logs, the console and manifests could not tell "аlice"
		// (Cyrillic а) or "alice\u200b" from alice.
		return verifiedToken{}, invalidToken(ModeJWT, fmt.Sprintf("the %s claim must be printable ASCII, at most 256 bytes, to name an agent", v.claim), nil)
	}
	if missing := missingScopes(all, v.cfg.RequiredScopes); len(missing) > 0 {
		return verifiedToken{}, &Failure{Status: http.StatusForbidden, Code: CodeInsufficientScope, Method: ModeJWT,
			Desc: "missing scope " + strings.Join(missing, " "), Scope: strings.Join(v.cfg.RequiredScopes, " ")}
	}
	for name, want := range v.cfg.RequiredClaims {
		if !claimHas(all[name], want) {
			return verifiedToken{}, &Failure{Status: http.StatusForbidden, Code: CodeInsufficientScope, Method: ModeJWT,
				Desc: fmt.Sprintf("claim %s does not hold %q", name, want)}
		}
	}
	exp := std.Expiry.Time()
	check := func() error {
		if !v.now().Add(-v.cfg.ClockSkew).Before(exp) {
			return errors.New("the token expired")
		}
		return v.published(kid, func() bool { return v.keys.hasKey(kid, pub) })
	}
	return verifiedToken{p: &intercept.Principal{ID: id, Method: ModeJWT, Claims: all, Check: check, Expires: exp,
		SigningKey: signingKeyRef(kid, pub)}, exp: exp, kid: kid, key: pub}, nil
}

// keyFor reports whether k can verify a signature made with alg: its
// alg, if it names one, is alg (RFC 7517 §4.4), and its type (and curve)
// are alg's.
func keyFor(k jose.JSONWebKey, alg string) bool {
	if k.Algorithm != "" && k.Algorithm != alg {
		return false
	}
	switch key := k.Key.(type) {
	case *rsa.PublicKey:
		return strings.HasPrefix(alg, "RS") || strings.HasPrefix(alg, "PS")
	case *ecdsa.PublicKey:
		switch alg {
		case string(jose.ES256):
			return key.Curve == elliptic.P256()
		case string(jose.ES384):
			return key.Curve == elliptic.P384()
		case string(jose.ES512):
			return key.Curve == elliptic.P521()
		}
	case ed25519.PublicKey:
		return alg == string(jose.EdDSA)
	}
	return false
}

// published reports why the signing key named kid, which has says is in
// the set held, is no longer published, or nil. A set held past
// jwks_cache_ttl is fetched again first (at most once per
// jwks_min_refresh, shared with every asker), as a new request's token
// would have it: not fresh, perhaps, rather than withdrawn. A set that
// cannot be fetched says nothing of the key: an error wrapping
// intercept.ErrUncheckable.
func (v *JWTVerifier) published(kid string, has func() bool) error {
	if has() {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), jwksFetchTimeout)
	defer cancel()
	_, err := v.keys.lookup(ctx, kid)
	switch {
	case has():
		return nil
	case err != nil && !errors.Is(err, errUnknownKID):
		return fmt.Errorf("the issuer's signing keys cannot be fetched (%v): %w", err, intercept.ErrUncheckable)
	}
	return errors.New("the token's signing key is no longer published")
}

// KeyPublished reports why the signing key ref names (a Principal's
// SigningKey) is no longer published by the issuer, or nil: the check a
// JWT Principal's Check makes, for a process that holds only a record of
// the credential (another replica's A2A push relay). An error wrapping
// intercept.ErrUncheckable says the key set cannot be fetched now.
func (v *JWTVerifier) KeyPublished(ref string) error {
	sum, kid, ok := strings.Cut(ref, ".")
	if !ok {
		return errors.New("not a reference to a JWT signing key")
	}
	if v.keys.hasKeyRef(kid, sum) {
		return nil
	}
	// The set held may be older than the key: another replica verified
	// the token, perhaps with a key the issuer published since this one
	// last fetched (under a new kid, or new material under an old one).
	// Withdrawn only if a set fetched from now on says so (at most once
	// per jwks_min_refresh, shared with every asker); ending a relay
	// cannot be undone.
	ctx, cancel := context.WithTimeout(context.Background(), jwksFetchTimeout)
	defer cancel()
	fetched, err := v.keys.refetch(ctx, v.now())
	switch {
	case v.keys.hasKeyRef(kid, sum):
		return nil
	case fetched:
		return errors.New("the token's signing key is no longer published")
	case err != nil:
		return fmt.Errorf("the issuer's signing keys cannot be fetched (%v): %w", err, intercept.ErrUncheckable)
	}
	return fmt.Errorf("the key set held, fetched before the key may have been published, does not hold it, and is fetched again at most once per jwks_min_refresh: %w", intercept.ErrUncheckable)
}

// signingKeyRef names a JWT signing key by the base64url SHA-256 of its
// public key (PKIX, DER) and its kid, in that order: the kid may hold a
// '.'; the digest does not. Empty if the key cannot be encoded.
func signingKeyRef(kid string, pub any) string {
	sum, ok := keyDigest(pub)
	if !ok {
		return ""
	}
	return sum + "." + kid
}

// keyDigest is the base64url SHA-256 of pub's PKIX DER encoding.
func keyDigest(pub any) (string, bool) {
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		return "", false
	}
	sum := sha256.Sum256(der)
	return base64.RawURLEncoding.EncodeToString(sum[:]), true
}

// missingScopes returns the required scopes the token's scope (a space
// separated string, RFC 8693) or scp (a list, as some IdPs send) lacks.
func missingScopes(claims map[string]any, required []string) []string {
	if len(required) == 0 {
		return nil
	}
	var have []string
	if s, ok := claims["scope"].(string); ok {
		have = strings.Fields(s)
	}
	switch scp := claims["scp"].(type) {
	case string:
		have = append(have, strings.Fields(scp)...)
	case []any:
		for _, s := range scp {
			if s, ok := s.(string); ok {
				have = append(have, s)
			}
		}
	}
	var missing []string
	for _, r := range required {
		if !slices.Contains(have, r) {
			missing = append(missing, r)
		}
	}
	return missing
}

func claimHas(v any, want string) bool {
	switch v := v.(type) {
	case string:
		return v == want
	case []any:
		for _, e := range v {
			if s, ok := e.(string); ok && s == want {
				return true
			}
		}
	}
	return false
}

// printableASCII reports whether s is 1 to 256 bytes of printable ASCII,
// spaces allowed between words (a display name) but not at either end.
func printableASCII(s string) bool {
	if s == "" || len(s) > 256 || s[0] == ' ' || s[len(s)-1] == ' ' {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] > 0x7e {
			return false
		}
	}
	return true
}

// audienceRoute is the route an audience names: {name} when it is the
// URL of a route's or virtual server's protected resource, whose path
// ends in /mcp/{name}, /sse/{name} or /ws/{name} (what RFC 9728 metadata
// gives as resource and an MCP client asks its token for, RFC 8707;
// behind a proxy that adds a path prefix, after it); a2aRoute(name) when
// it is an A2A agent's URL, …/a2a/{name}, as an A2A client asks its token
// for the agent it calls; "" for an audience that names the gateway as a
// whole (its base URL, …/mcp, …/a2a, or a name such as sluice).
func audienceRoute(aud string) string {
	u, err := url.Parse(aud)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return ""
	}
	segs := strings.Split(strings.TrimSuffix(u.EscapedPath(), "/"), "/")
	n := len(segs)
	if n < 3 || segs[n-1] == "" {
		return ""
	}
	name, err := url.PathUnescape(segs[n-1])
	if err != nil {
		name = segs[n-1]
	}
	switch segs[n-2] {
	case "mcp", "sse", "ws":
		return name
	case "a2a":
		return a2aRoute(name)
	}
	return ""
}

// a2aRoute is the route name of the A2A agent name: apart from the MCP
// routes' names (which hold no ':'), so a token for the agent research
// opens neither the MCP route research nor another agent.
func a2aRoute(name string) string { return "a2a:" + name }

// forRoute reports whether p, a principal v authenticated, may act on
// route ("" for a path of no route): one of its token's audiences is one
// v accepts and names route or no route at all. A token issued for one
// MCP server of the gateway is not spent at another (RFC 8707; the MCP
// authorization spec's audience validation).
func (v *JWTVerifier) forRoute(p *intercept.Principal, route string) bool {
	ok := func(a any) bool {
		s, _ := a.(string)
		r, known := v.audRoutes[s]
		return known && (r == "" || r == route)
	}
	switch aud := p.Claims["aud"].(type) {
	case string:
		return ok(aud)
	case []any:
		return slices.ContainsFunc(aud, ok)
	}
	return false
}
