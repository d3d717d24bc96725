package auth

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"path"
	"strings"
	"time"

	"github.com/sluicehq/sluice/intercept"
)

// Authenticator authenticates every request on the agents' listener. It
// is safe for concurrent use.
type Authenticator struct {
	cfg       Config
	keys      *KeyStore    // nil unless api_key
	jwt       *JWTVerifier // nil unless jwt
	maxToken  int
	onFailure func(*http.Request, *Failure)
	routes    map[string]bool
}

// Deps are what an Authenticator needs besides its config. The zero
// value is usable when api_key is not a mode.
type Deps struct {
	// KeyFile is the API key file (APIKeyConfig.File, or its default
	// resolved against the data directory); required for api_key.
	KeyFile string
	// HTTPClient fetches the JWKS; nil uses one with a 10s timeout.
	HTTPClient *http.Client
	// Now is the clock; nil is time.Now.
	Now func() time.Time
	// OnFailure, if set, is told about every refused request (for an
	// event and a log line); it must not block.
	OnFailure func(r *http.Request, f *Failure)
	// Routes, if not nil, are the names of the routes and virtual
	// servers protected resource metadata is served for; others get 404.
	Routes []string
}

// New returns the authenticator of cfg, which it validates. With mode
// none it returns nil, nil: there is nothing to wrap.
func New(cfg Config, d Deps) (*Authenticator, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Mode.Has(ModeNone) {
		return nil, nil
	}
	a := &Authenticator{cfg: cfg, maxToken: cfg.MaxTokenBytes, onFailure: d.OnFailure}
	if a.maxToken == 0 {
		a.maxToken = defaultMaxTokenBytes
	}
	if d.Routes != nil {
		a.routes = make(map[string]bool, len(d.Routes))
		for _, r := range d.Routes {
			a.routes[r] = true
		}
	}
	if cfg.Mode.Has(ModeAPIKey) {
		if d.KeyFile == "" {
			return nil, errors.New("auth: api_key needs a key file")
		}
		ks, err := NewKeyStore(d.KeyFile, d.Now)
		if err != nil {
			return nil, fmt.Errorf("auth.api_keys.file: %w", err)
		}
		a.keys = ks
	}
	if cfg.Mode.Has(ModeJWT) {
		a.jwt = NewJWTVerifier(cfg.JWT, d.HTTPClient, d.Now)
	}
	return a, nil
}

// Warm fetches what the first request would otherwise wait for (the
// JWKS). An error is worth a log line, not a refusal to start: requests
// fail closed until the keys can be fetched.
func (a *Authenticator) Warm(ctx context.Context) error {
	if a == nil || a.jwt == nil {
		return nil
	}
	return a.jwt.Warm(ctx)
}

// metadataPrefix is where RFC 9728 protected resource metadata is served.
const metadataPrefix = "/.well-known/oauth-protected-resource"

// Middleware authenticates every request before next sees it: the
// principal goes into the request's context (intercept.PrincipalFrom) and
// the Authorization header is removed, so nothing behind can forward the
// agent's credential. Refusals are 401 (403 for a missing scope) with a
// WWW-Authenticate challenge naming the resource metadata and a JSON-RPC
// error body. GET /healthz and the metadata itself are served without
// credentials, and GET /readyz too, as its status and "ready" or "not
// ready": the routes it names and why one is not reachable are for an
// authenticated request (a bad credential is told to OnFailure). A nil
// Authenticator returns next.
func (a *Authenticator) Middleware(next http.Handler) http.Handler {
	if a == nil {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == metadataPrefix || strings.HasPrefix(r.URL.Path, metadataPrefix+"/") {
			a.serveMetadata(w, r)
			return
		}
		if r.Method == http.MethodGet && r.URL.Path == "/healthz" {
			next.ServeHTTP(w, r)
			return
		}
		p, err := a.Authenticate(r)
		if r.Method == http.MethodGet && r.URL.Path == "/readyz" && err != nil {
			// A probe: its status, not which upstreams are behind the
			// gateway nor why one is not reachable (addresses, paths). A
			// bad credential is told of, but a probe sending a stale one
			// is not made to fail.
			var f *Failure
			if !errors.Is(err, ErrNoCredentials) && errors.As(err, &f) && a.onFailure != nil {
				a.onFailure(r, f)
			}
			readyStatus(w, r, next)
			return
		}
		if err != nil {
			var f *Failure
			if !errors.As(err, &f) {
				f = invalidToken("", "authentication failed", err)
			}
			a.refuse(w, r, f)
			return
		}
		r2 := r.WithContext(intercept.WithPrincipal(r.Context(), p))
		r2.Header = r.Header.Clone()
		r2.Header.Del("Authorization")
		next.ServeHTTP(w, r2)
	})
}

// readyStatus answers r, a readiness probe without credentials, with the
// status next gives it and a body that says only ready or not.
func readyStatus(w http.ResponseWriter, r *http.Request, next http.Handler) {
	rec := &statusOnly{h: make(http.Header)}
	next.ServeHTTP(rec, r)
	status := cmp.Or(rec.status, http.StatusOK)
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	if status >= 200 && status < 300 {
		_, _ = io.WriteString(w, "ready\n")
		return
	}
	_, _ = io.WriteString(w, "not ready (an authenticated request is told why)\n")
}

// statusOnly is a ResponseWriter that keeps the status and drops the
// rest.
type statusOnly struct {
	h      http.Header
	status int
}

func (s *statusOnly) Header() http.Header { return s.h }

func (s *statusOnly) WriteHeader(code int) {
	if s.status == 0 {
		s.status = code
	}
}

func (s *statusOnly) Write(b []byte) (int, error) {
	s.WriteHeader(http.StatusOK)
	return len(b), nil
}

// KeyHolds reports why the API key with id no longer holds (revoked,
// expired, gone from the key file), or nil: what a Principal's Check asks,
// for a process that has only the key's id (another replica's A2A push
// relay). Without api_key mode every id is refused; a nil Authenticator
// (no auth:) holds none either.
func (a *Authenticator) KeyHolds(id string) error {
	if a == nil || a.keys == nil {
		return errors.New("API keys are not configured on this replica")
	}
	return a.keys.stillGood(id)
}

// JWTKeyPublished reports why the JWT signing key ref names (a
// Principal's SigningKey) is no longer published by the issuer, or nil:
// what a JWT Principal's Check asks of its key, for a process that has
// only the reference (another replica's A2A push relay). Without jwt mode
// every reference is refused.
func (a *Authenticator) JWTKeyPublished(ref string) error {
	if a == nil || a.jwt == nil {
		return errors.New("JWTs are not configured on this replica")
	}
	return a.jwt.KeyPublished(ref)
}

// Authenticate returns the principal of r, or a *Failure.
func (a *Authenticator) Authenticate(r *http.Request) (*intercept.Principal, error) {
	vals := r.Header.Values("Authorization")
	switch {
	case len(vals) > 1:
		return nil, invalidRequest("more than one Authorization header")
	case len(vals) == 0:
		if a.cfg.Mode.Has(ModeMTLS) {
			p, err := certPrincipal(r.TLS, a.cfg.MTLS.Identity)
			if err != nil {
				return nil, err
			}
			if p != nil {
				return a.notKeyAgent(p)
			}
		}
		return nil, &Failure{Status: http.StatusUnauthorized, Desc: "no credentials", Err: ErrNoCredentials}
	}
	v := vals[0]
	if len(v) > a.maxToken {
		return nil, invalidRequest(fmt.Sprintf("the Authorization header is longer than %d bytes", a.maxToken))
	}
	scheme, tok, ok := strings.Cut(v, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return nil, invalidRequest("use Authorization: Bearer <token>")
	}
	tok = strings.TrimLeft(tok, " ")
	if !token68(tok) {
		return nil, invalidRequest("the bearer token is malformed")
	}
	switch {
	case a.keys != nil && (strings.HasPrefix(tok, KeyPrefix) || a.jwt == nil):
		return a.keys.Authenticate(tok)
	case a.jwt != nil:
		p, err := a.jwt.Authenticate(r.Context(), tok)
		if err != nil {
			return nil, err
		}
		if !a.jwt.forRoute(p, requestRoute(r)) {
			return nil, invalidToken(ModeJWT, "the token was issued for another route of this gateway (its audience); get a token for this route's resource", nil)
		}
		if err := a.notCertAgent(p.ID); err != nil {
			return nil, invalidToken(ModeJWT, err.Error(), nil)
		}
		return a.notKeyAgent(p)
	}
	return nil, invalidRequest("this gateway authenticates agents by client certificate, not bearer token")
}

// AgentNameHolds reports why a token or certificate may no longer act as
// agent: an API key is issued for the name (see Config.SharedAgentNames);
// an error wrapping intercept.ErrUncheckable when the key file cannot be
// read. It is what a token's or certificate's Principal.Check asks of its
// name, for a process that has only the name (another replica's A2A push
// relay). Without api_key mode, or with shared_agent_names, every name
// holds.
func (a *Authenticator) AgentNameHolds(agent string) error {
	if a == nil || a.keys == nil || a.cfg.SharedAgentNames {
		return nil
	}
	named, err := a.keys.namesAgent(agent)
	switch {
	case err != nil:
		return fmt.Errorf("whether agent %q is an API key's cannot be told: %w", agent, err)
	case named:
		return fmt.Errorf("agent %q is an API key's (auth.api_keys); a token or certificate cannot act as it (auth.shared_agent_names)", agent)
	}
	return nil
}

// notCertAgent returns why a token may not act as agent, or nil: with
// tokens named by a claim their holders may choose beside certificates
// named by URI SAN (Config.tokensMayNameCerts; Validate refuses it with
// common names), a name with a ':' is shaped as a certificate's, every
// one of which is a URI, and belongs to the mtls method.
func (a *Authenticator) notCertAgent(agent string) error {
	if a.cfg.tokensMayNameCerts() && strings.Contains(agent, ":") {
		return fmt.Errorf("the token's %s %q is shaped as a client certificate's agent (a URI, auth.mtls.identity: uri); a token cannot act as a certificate's agent (auth.shared_agent_names)", a.cfg.JWT.AgentClaim, agent)
	}
	return nil
}

// notKeyAgent refuses p, authenticated by token or certificate, when its
// agent is one an API key is issued for (see Config.SharedAgentNames),
// and returns a copy whose Check also ends a connection once a key is
// issued for its name. p may be shared (the verified token cache).
func (a *Authenticator) notKeyAgent(p *intercept.Principal) (*intercept.Principal, error) {
	if a.keys == nil || a.cfg.SharedAgentNames {
		return p, nil
	}
	taken := func() error { return a.AgentNameHolds(p.ID) }
	if err := taken(); err != nil {
		return nil, invalidToken(p.Method, err.Error(), nil)
	}
	q := *p
	check := p.Check
	q.Check = func() error {
		if check != nil {
			if err := check(); err != nil {
				return err
			}
		}
		return taken()
	}
	return &q, nil
}

// token68 reports whether s is an RFC 9110 token68, the syntax of a
// bearer token (RFC 6750 §2.1).
func token68(s string) bool {
	if s == "" {
		return false
	}
	i := 0
	for ; i < len(s); i++ {
		c := s[i]
		if 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.IndexByte("-._~+/", c) >= 0 {
			continue
		}
		break
	}
	if i == 0 {
		return false
	}
	for ; i < len(s); i++ {
		if s[i] != '=' {
			return false
		}
	}
	return true
}

func (a *Authenticator) refuse(w http.ResponseWriter, r *http.Request, f *Failure) {
	if a.onFailure != nil {
		a.onFailure(r, f)
	}
	ch := fmt.Sprintf(`Bearer resource_metadata=%q`, a.metadataURL(r, resourcePath(r.URL.Path)))
	if f.Code != "" {
		ch += fmt.Sprintf(`, error=%q, error_description=%q`, f.Code, quoteSafe(f.Desc))
	}
	if f.Scope != "" {
		ch += fmt.Sprintf(`, scope=%q`, quoteSafe(f.Scope))
	}
	w.Header().Set("WWW-Authenticate", ch)
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	status := f.Status
	if status == 0 {
		status = http.StatusUnauthorized
	}
	word := "unauthorized"
	if status == http.StatusForbidden {
		word = "forbidden"
	}
	w.WriteHeader(status)
	we := &intercept.WireError{Code: intercept.CodeInvalidRequest, Message: word + ": " + f.Desc}
	if f.Code != "" { // none for a request without credentials (RFC 6750 §3.1), as in the challenge
		we.Data = map[string]string{"error": f.Code}
	}
	_, _ = w.Write(intercept.ErrorResponse(nil, we))
}

// quoteSafe keeps a value inside an auth-param's quoted string.
func quoteSafe(s string) string {
	return strings.Map(func(r rune) rune {
		if r == '"' || r == '\\' || r < 0x20 || r > 0x7e {
			return '\''
		}
		return r
	}, s)
}

// resourcePath is the protected resource a request path belongs to:
// /mcp/{name}, /sse/{name} (its message endpoint included) or /ws/{name};
// "" for any other path.
func resourcePath(p string) string {
	parts := strings.SplitN(strings.TrimPrefix(p, "/"), "/", 3)
	if len(parts) >= 2 && parts[1] != "" {
		switch parts[0] {
		case "mcp", "sse", "ws":
			return "/" + parts[0] + "/" + parts[1]
		}
	}
	return ""
}

// requestRoute is the name of the route or virtual server r is for, as
// the gateway's mux reads it from the escaped path: /mcp/{name},
// /sse/{name} (and its message endpoint), /ws/{name}; "" for any other
// path (the unnamed virtual server's /mcp, /sse, /ws and /sse/message,
// A2A's /a2a/.well-known/…), and a2aRoute(name) for an A2A agent's
// /a2a/{name}[/…] (its JSON-RPC and REST endpoints and its card).
func requestRoute(r *http.Request) string {
	p := r.URL.EscapedPath()
	if rest, ok := strings.CutPrefix(p, "/a2a/"); ok {
		name, _, _ := strings.Cut(rest, "/")
		if u, err := url.PathUnescape(name); err == nil {
			name = u
		}
		if name == "" || name == ".well-known" {
			return ""
		}
		return a2aRoute(name)
	}
	if p == "/sse/message" && r.Method == http.MethodPost {
		return "" // the unnamed virtual server's message endpoint
	}
	res := resourcePath(p)
	if res == "" {
		return ""
	}
	name := strings.SplitN(res[1:], "/", 2)[1]
	if u, err := url.PathUnescape(name); err == nil {
		return u
	}
	return name
}

func (a *Authenticator) base(r *http.Request) string {
	if a.cfg.Resource != "" {
		return strings.TrimRight(a.cfg.Resource, "/")
	}
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	return scheme + "://" + r.Host
}

func (a *Authenticator) metadataURL(r *http.Request, resource string) string {
	return a.base(r) + metadataPrefix + resource
}

// serveMetadata answers GET /.well-known/oauth-protected-resource[/{prefix}/{name}]
// with RFC 9728 protected resource metadata.
func (a *Authenticator) serveMetadata(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	res := strings.TrimPrefix(r.URL.Path, metadataPrefix)
	if res != "" && (resourcePath(res) != res || path.Clean(res) != res) {
		http.NotFound(w, r)
		return
	}
	if res != "" && a.routes != nil && !a.routes[strings.SplitN(res[1:], "/", 2)[1]] {
		http.NotFound(w, r)
		return
	}
	servers := a.cfg.AuthorizationServers
	if len(servers) == 0 && a.cfg.JWT.Issuer != "" {
		servers = []string{a.cfg.JWT.Issuer}
	}
	md := struct {
		Resource               string   `json:"resource"`
		AuthorizationServers   []string `json:"authorization_servers,omitempty"`
		BearerMethodsSupported []string `json:"bearer_methods_supported"`
		ScopesSupported        []string `json:"scopes_supported,omitempty"`
		ResourceName           string   `json:"resource_name,omitempty"`
	}{
		Resource:               a.base(r) + res,
		AuthorizationServers:   servers,
		BearerMethodsSupported: []string{"header"},
		ScopesSupported:        a.cfg.JWT.RequiredScopes,
		ResourceName:           "Sluice MCP gateway" + res,
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "max-age=300")
	_ = json.NewEncoder(w).Encode(md)
}
