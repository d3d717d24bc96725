package auth

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"slices"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// Modes of authentication.
const (
	ModeNone   = "none"    // no authentication: the agent is who the client says it is
	ModeAPIKey = "api_key" // Authorization: Bearer sk_… issued by `sluice keys create`
	ModeJWT    = "jwt"     // Authorization: Bearer <JWT> from an external IdP
	ModeMTLS   = "mtls"    // a verified TLS client certificate
)

// Modes is the `mode:` of the auth section: one mode, or a list of them
// tried in turn (a bearer token that looks like an API key goes to
// api_key, any other to jwt; a request with no Authorization header to
// mtls).
type Modes []string

// UnmarshalYAML accepts `mode: jwt` as well as `mode: [jwt, api_key]`.
func (m *Modes) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode {
		*m = Modes{n.Value}
		return nil
	}
	var l []string
	if err := n.Decode(&l); err != nil {
		return err
	}
	*m = l
	return nil
}

// Has reports whether mode is one of m.
func (m Modes) Has(mode string) bool { return slices.Contains(m, mode) }

// Config is the `auth:` section. Its zero value is not valid: name a mode.
type Config struct {
	// Mode is none, api_key, jwt or mtls, or a list of api_key, jwt and
	// mtls. none turns authentication off explicitly (required to listen
	// beyond loopback without authentication).
	Mode Modes `yaml:"mode"`
	// Resource is the gateway's public base URL, such as
	// https://sluice.example.com: the protected resource of RFC 9728 is
	// Resource + /mcp/{name}. Empty derives it from each request's Host
	// (and TLS), which is right unless a proxy in front rewrites them.
	Resource string `yaml:"resource"`
	// AuthorizationServers are the issuer URLs the protected resource
	// metadata names (RFC 9728 authorization_servers), where clients get
	// tokens. Empty: the jwt issuer, when there is one.
	AuthorizationServers []string `yaml:"authorization_servers"`
	// MaxTokenBytes bounds the Authorization header (default 8192); a
	// longer one is refused before it is parsed.
	MaxTokenBytes int `yaml:"max_token_bytes"`
	// JWT configures mode jwt.
	JWT JWTConfig `yaml:"jwt"`
	// APIKeys configures mode api_key.
	APIKeys APIKeyConfig `yaml:"api_keys"`
	// MTLS configures mode mtls; the listener's tls: section must name a
	// client_ca_file.
	MTLS MTLSConfig `yaml:"mtls"`
	// SharedAgentNames lets a token or certificate act as an agent an API
	// key is issued for (api_key beside jwt or mtls), and a token as a
	// certificate's agent (jwt beside mtls). Off, an API key's agent name,
	// revoked and expired keys' too, is the API key method's own: a token
	// whose agent claim names it is refused, since whoever can choose that
	// claim (an IdP user, a client they registered) would otherwise become
	// the agent, its manifest, memory and approvals. So is a certificate's
	// agent the mtls method's when tokens are named by a claim other than
	// sub: with mtls.identity uri a token whose agent has a ':' (a URI, as
	// every certificate's agent then is) is refused, and without it such a
	// config is refused at load (no list of certificates' names exists to
	// refuse a token by).
	SharedAgentNames bool `yaml:"shared_agent_names"`
}

// JWTConfig configures JWT bearer tokens.
type JWTConfig struct {
	// Issuer is the iss every token must carry (required).
	Issuer string `yaml:"issuer"`
	// Audience: a token's aud must name at least one of these (required):
	// a token issued for another service is refused.
	Audience []string `yaml:"audience"`
	// JWKSURL is where the issuer publishes its signing keys (required,
	// https unless the host is loopback).
	JWKSURL string `yaml:"jwks_url"`
	// Algorithms are the signature algorithms accepted (default RS256,
	// RS384, RS512, PS256, PS384, PS512, ES256, ES384, ES512, EdDSA).
	// Only asymmetric algorithms: none and HS* are refused at load.
	Algorithms []string `yaml:"algorithms"`
	// ClockSkew is the leeway on exp, nbf and iat (default 60s).
	ClockSkew time.Duration `yaml:"clock_skew"`
	// AgentClaim names the claim that names the agent (default sub).
	AgentClaim string `yaml:"agent_claim"`
	// RequiredScopes must all be in the token's scope (or scp) claim, or
	// the request gets 403 insufficient_scope.
	RequiredScopes []string `yaml:"required_scopes"`
	// RequiredClaims must be present with these exact string values (a
	// list claim must contain the value), or 403 insufficient_scope.
	RequiredClaims map[string]string `yaml:"required_claims"`
	// JWKSCacheTTL is how long fetched keys stay usable without a
	// successful refetch, so they survive a JWKS outage that long
	// (default 1h).
	JWKSCacheTTL time.Duration `yaml:"jwks_cache_ttl"`
	// JWKSMinRefresh is the least time between two fetches of the JWKS,
	// however many tokens name an unknown kid (default 30s).
	JWKSMinRefresh time.Duration `yaml:"jwks_min_refresh"`
}

// APIKeyConfig configures API keys.
type APIKeyConfig struct {
	// File is the key file `sluice keys` writes (default
	// <data_dir>/agent_keys.json). The gateway rereads it when it changes,
	// within a second, so a revoked key stops working without a restart.
	File string `yaml:"file"`
}

// MTLSConfig configures client certificates.
type MTLSConfig struct {
	// Identity says what in the certificate names the agent: uri (the
	// first URI SAN, such as a SPIFFE ID), cn (the subject's common
	// name), or empty for the URI SAN when there is one, else the CN.
	Identity string `yaml:"identity"`
}

// DefaultAlgorithms are the JWT algorithms accepted when none are
// configured: every asymmetric one go-jose knows.
var DefaultAlgorithms = []string{"RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA"}

const (
	defaultMaxTokenBytes  = 8192
	defaultClockSkew      = time.Minute
	defaultJWKSCacheTTL   = time.Hour
	defaultJWKSMinRefresh = 30 * time.Second
)

// Validate checks c, naming the key under auth: at fault and the fix.
func (c *Config) Validate() error {
	if len(c.Mode) == 0 {
		return errors.New("auth.mode: missing; set none, api_key, jwt or mtls (or a list such as [jwt, api_key])")
	}
	seen := map[string]bool{}
	for _, m := range c.Mode {
		switch m {
		case ModeNone:
			if len(c.Mode) > 1 {
				return errors.New("auth.mode: none cannot be combined with other modes; use none alone, or list only api_key, jwt and mtls")
			}
		case ModeAPIKey, ModeJWT, ModeMTLS:
		default:
			return fmt.Errorf("auth.mode: %q is not a mode; use none, api_key, jwt or mtls", m)
		}
		if seen[m] {
			return fmt.Errorf("auth.mode: %q is listed twice; list each mode once", m)
		}
		seen[m] = true
	}
	if c.MaxTokenBytes < 0 {
		return fmt.Errorf("auth.max_token_bytes: %d is negative; give a size in bytes, or 0 for %d", c.MaxTokenBytes, defaultMaxTokenBytes)
	}
	if c.Resource != "" {
		u, err := url.Parse(c.Resource)
		if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
			return fmt.Errorf("auth.resource: %q is not a base URL; give the gateway's public URL, such as https://sluice.example.com", c.Resource)
		}
	}
	for i, s := range c.AuthorizationServers {
		if u, err := url.Parse(s); err != nil || u.Scheme != "https" && u.Scheme != "http" || u.Host == "" {
			return fmt.Errorf("auth.authorization_servers[%d]: %q is not an absolute URL; give the issuer URL of an authorization server", i, s)
		}
	}
	if c.Mode.Has(ModeJWT) {
		if err := c.JWT.validate(); err != nil {
			return err
		}
	} else if !c.JWT.isZero() {
		return errors.New("auth.jwt: set but mode does not include jwt; add jwt to auth.mode or remove auth.jwt")
	}
	if m := c.MTLS.Identity; m != "" && m != "uri" && m != "cn" {
		return fmt.Errorf("auth.mtls.identity: %q: use uri, cn, or leave it empty for the URI SAN else the CN", m)
	}
	if c.tokensMayNameCerts() && c.MTLS.Identity != "uri" {
		return fmt.Errorf("auth.jwt.agent_claim: %s beside mtls, whose agents may be common names: a token whose %s named a certificate's agent would act as it (its manifest, route memory and approvals), "+
			"and an IdP's users, or the clients they register, may choose that claim; set auth.mtls.identity: uri (certificates named by their URI SAN, which a token may then not name), "+
			"agent_claim: sub, or auth.shared_agent_names: true if a token and a certificate naming the same agent are one agent", c.JWT.AgentClaim, c.JWT.AgentClaim)
	}
	return nil
}

// tokensMayNameCerts reports whether a JWT's agent claim could name a
// certificate's agent against the operator's intent: jwt and mtls are both
// modes, shared_agent_names is off, and agents' tokens are named by a
// claim other than sub, one the IdP's users or the clients they register
// may choose (preferred_username, email, azp, …). A sub is the issuer's
// to assign, as a certificate's name is the CA's.
func (c *Config) tokensMayNameCerts() bool {
	return c.Mode.Has(ModeJWT) && c.Mode.Has(ModeMTLS) && !c.SharedAgentNames && c.JWT.AgentClaim != "" && c.JWT.AgentClaim != "sub"
}

func (j *JWTConfig) isZero() bool {
	return j.Issuer == "" && len(j.Audience) == 0 && j.JWKSURL == "" && len(j.Algorithms) == 0 && j.AgentClaim == "" &&
		len(j.RequiredScopes) == 0 && len(j.RequiredClaims) == 0 && j.ClockSkew == 0 && j.JWKSCacheTTL == 0 && j.JWKSMinRefresh == 0
}

func (j *JWTConfig) validate() error {
	if j.Issuer == "" {
		return errors.New("auth.jwt.issuer: missing; give the issuer URL your IdP puts in iss, such as https://idp.example/realms/agents")
	}
	if len(j.Audience) == 0 || slices.Contains(j.Audience, "") {
		return errors.New("auth.jwt.audience: missing; give the audience your IdP issues tokens for Sluice with (tokens for other services are refused)")
	}
	u, err := url.Parse(j.JWKSURL)
	switch {
	case j.JWKSURL == "":
		return errors.New("auth.jwt.jwks_url: missing; give the URL of the issuer's JSON Web Key Set (jwks_uri in its OpenID configuration)")
	case err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http"):
		return fmt.Errorf("auth.jwt.jwks_url: %q is not an absolute https URL", j.JWKSURL)
	case u.Scheme == "http" && !loopbackHost(u.Hostname()):
		return fmt.Errorf("auth.jwt.jwks_url: %q: keys fetched over plain http could be replaced in transit; use https", j.JWKSURL)
	}
	for i, a := range j.Algorithms {
		switch {
		case strings.EqualFold(a, "none"):
			return fmt.Errorf("auth.jwt.algorithms[%d]: none would accept unsigned tokens; remove it", i)
		case strings.HasPrefix(strings.ToUpper(a), "HS"):
			return fmt.Errorf("auth.jwt.algorithms[%d]: %s is a shared-secret algorithm, open to key confusion with a published public key; use an asymmetric algorithm (RS256, ES256, EdDSA, …)", i, a)
		case !slices.Contains(DefaultAlgorithms, a):
			return fmt.Errorf("auth.jwt.algorithms[%d]: %q is not supported; use some of %s", i, a, strings.Join(DefaultAlgorithms, ", "))
		}
	}
	for _, d := range []struct {
		key string
		v   time.Duration
	}{{"clock_skew", j.ClockSkew}, {"jwks_cache_ttl", j.JWKSCacheTTL}, {"jwks_min_refresh", j.JWKSMinRefresh}} {
		if d.v < 0 {
			return fmt.Errorf("auth.jwt.%s: %v is negative; give a duration such as 30s, or 0 for the default", d.key, d.v)
		}
	}
	if j.ClockSkew > 10*time.Minute {
		return fmt.Errorf("auth.jwt.clock_skew: %v would accept tokens long expired; keep it at most 10m", j.ClockSkew)
	}
	return nil
}

func loopbackHost(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// ValidateAs checks j as a JWT section of its own at key (such as
// "admin_jwt"), naming the key at fault and the fix.
func (j *JWTConfig) ValidateAs(key string) error {
	if err := j.validate(); err != nil {
		return errors.New(strings.Replace(err.Error(), "auth.jwt", key, 1))
	}
	return nil
}
