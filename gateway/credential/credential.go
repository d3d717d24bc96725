// Package credential supplies the credentials Sluice presents to an
// upstream MCP server on its own behalf: an OAuth 2.0 access token got
// with the client credentials grant (RFC 6749 §4.4), cached until shortly
// before it expires. Agents never see these credentials, and their own
// are never forwarded.
//
//	tokens, _ := credential.NewClientCredentials(credential.ClientCredentialsConfig{
//		TokenURL: "https://idp.example/oauth/token", ClientID: "sluice", ClientSecret: secret,
//	}, credential.Deps{})
//	client := &http.Client{Transport: &credential.Transport{Tokens: tokens}}
package credential

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"
)

// ClientCredentialsConfig is an upstream's `oauth:` section.
type ClientCredentialsConfig struct {
	// TokenURL is the authorization server's token endpoint (required;
	// https unless the host is loopback).
	TokenURL string `yaml:"token_url"`
	// ClientID and ClientSecret authenticate Sluice to the token endpoint
	// with HTTP Basic (client_secret_basic). Both are required; write the
	// secret as ${ENV} or ${file:PATH} rather than in the file.
	ClientID     string `yaml:"client_id"`
	ClientSecret string `yaml:"client_secret"`
	// Scopes are requested with the token (scope parameter); empty asks
	// for the client's default scopes.
	Scopes []string `yaml:"scopes"`
	// Resource is the RFC 8707 resource indicator: the upstream's URL as
	// its authorization server knows it. Empty sends none.
	Resource string `yaml:"resource"`
	// Audience is sent as the audience parameter, which some providers
	// (Auth0) use instead of resource. Empty sends none.
	Audience string `yaml:"audience"`
}

// Validate checks c, naming the key (under prefix, such as
// "upstreams[0].oauth") at fault and the fix.
func (c *ClientCredentialsConfig) Validate(prefix string) error {
	u, err := url.Parse(c.TokenURL)
	switch {
	case c.TokenURL == "":
		return fmt.Errorf("%s.token_url: missing; give the authorization server's token endpoint", prefix)
	case err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http"):
		return fmt.Errorf("%s.token_url: %q is not an absolute https URL", prefix, c.TokenURL)
	case u.Scheme == "http" && !loopback(u.Hostname()):
		return fmt.Errorf("%s.token_url: %q: the client secret would cross the network in clear; use https", prefix, c.TokenURL)
	case c.ClientID == "":
		return fmt.Errorf("%s.client_id: missing; give the client id the authorization server issued to Sluice", prefix)
	case c.ClientSecret == "":
		return fmt.Errorf("%s.client_secret: missing; give it as ${ENV_VAR} or ${file:/path/to/secret}", prefix)
	}
	if c.Resource != "" {
		if u, err := url.Parse(c.Resource); err != nil || !u.IsAbs() || u.Fragment != "" {
			return fmt.Errorf("%s.resource: %q is not an absolute URL without a fragment (RFC 8707)", prefix, c.Resource)
		}
	}
	return nil
}

func loopback(host string) bool {
	return host == "localhost" || host == "127.0.0.1" || host == "::1"
}

// Deps are what a ClientCredentials needs besides its config; the zero
// value is usable.
type Deps struct {
	// Client calls the token endpoint; nil is a client with a 10s
	// timeout. A copy of it is used that follows no redirect.
	Client *http.Client
	// Now is the clock; nil is time.Now.
	Now func() time.Time
}

// ClientCredentials gets access tokens with the client credentials grant
// and caches each until refreshBefore its expiry (or half its lifetime, if
// that is shorter). One fetch runs at a time, on its own (a caller that
// goes away does not end it, and it waits at most fetchTimeout); callers
// without a valid token wait for it, each no longer than its context,
// while a token due for refresh but still valid is used at once, the
// refresh fetched behind it. A fetch that failed, or a token the upstream
// refused as soon as it replaced a refused one, holds the next fetch for
// minFetchInterval; callers without a valid token meanwhile get the error
// at once. It is safe for concurrent use.
type ClientCredentials struct {
	cfg      ClientCredentialsConfig
	endpoint string // TokenURL as errors name it (safeURL)
	client   *http.Client
	now      func() time.Time

	mu       sync.Mutex // guards the fields below
	token    string
	refresh  time.Time     // when the token is to be replaced
	expiry   time.Time     // when it lapses
	inflight chan struct{} // closed when the fetch under way ends; nil when none is
	lastErr  error         // why the last fetch failed; nil if it succeeded
	// hold is when the next fetch may start, after one that failed or a
	// token refused as soon as it replaced a refused one (minFetchInterval).
	hold        time.Time
	fetched     time.Time // when the token was got
	replacement bool      // the token replaced one the upstream refused
	dropped     bool      // the upstream refused a token since the last fetch
}

// refreshBefore is how long before its expiry a token is replaced.
const refreshBefore = time.Minute

// minFetchInterval is the least time between a fetch that failed and
// the next, and between the fetch of a token the upstream refused as
// soon as it replaced a refused one and the next: asked again at every
// call, an endpoint already failing (or rate-limiting the gateway), and
// one whose tokens the upstream never takes, got one request a call.
const minFetchInterval = 5 * time.Second

// maxTokenLife caps a token's lifetime as the gateway counts it: one
// longer is replaced after a day. An expires_in beyond what a
// time.Duration holds (about 292 years) overflowed into the past, and
// every call fetched a token again and failed.
const maxTokenLife = 24 * time.Hour

// fetchTimeout bounds one fetch of a token, whatever client Deps gave.
const fetchTimeout = 10 * time.Second

// maxTokenResponse bounds the token endpoint's answer.
const maxTokenResponse = 1 << 20

// NewClientCredentials returns the token source of cfg, which must have
// passed Validate.
func NewClientCredentials(cfg ClientCredentialsConfig, d Deps) *ClientCredentials {
	client := http.Client{Timeout: fetchTimeout}
	if d.Client != nil {
		client = *d.Client
	}
	client.CheckRedirect = refuseRedirect
	if d.Now == nil {
		d.Now = time.Now
	}
	return &ClientCredentials{cfg: cfg, endpoint: safeURL(cfg.TokenURL), client: &client, now: d.Now}
}

// safeURL is u as errors name it, without user information or query (a
// password, a key): an error getting a token reaches the agent whose call
// needed it.
func safeURL(u string) string {
	p, err := url.Parse(u)
	if err != nil {
		return "(token_url)"
	}
	p.User, p.RawQuery, p.ForceQuery, p.Fragment, p.RawFragment = nil, "", false, "", ""
	return p.String()
}

// refuseRedirect is the token endpoint client's CheckRedirect: a
// redirect is not followed. Go's client would send the Authorization
// header, the client secret, along to the same host and its subdomains,
// whatever the scheme or port, so a redirect from https to http put the
// secret on the network in clear, which token_url's https is there to
// prevent.
func refuseRedirect(req *http.Request, _ []*http.Request) error {
	return &redirectError{to: safeURL(req.URL.String())}
}

// redirectError is a redirect the token endpoint answered with.
type redirectError struct{ to string }

func (e *redirectError) Error() string {
	return "it redirected to " + e.to + ", which is not followed (the client secret would go with it); set token_url to where it redirects"
}

// Token returns a valid access token, fetching one when there is none or
// the cached one is due for refresh. A token endpoint that stalls holds a
// caller with no valid token until its ctx ends or the fetch times out,
// and none with one: before, every call to the upstream queued behind
// the fetch under one lock, and each fetched again in turn, a stalled
// endpoint's timeout (10 s) apiece, valid token or not.
func (c *ClientCredentials) Token(ctx context.Context) (string, error) {
	c.mu.Lock()
	now := c.now()
	if c.token != "" && now.Before(c.refresh) {
		tok := c.token
		c.mu.Unlock()
		return tok, nil
	}
	wait := c.inflight
	if wait == nil && now.Before(c.hold) {
		defer c.mu.Unlock()
		if c.token != "" && now.Before(c.expiry) {
			return c.token, nil
		}
		return "", c.heldError(now)
	}
	if wait == nil {
		wait = make(chan struct{})
		c.inflight = wait
		go c.fetchShared(wait)
	}
	if c.token != "" && now.Before(c.expiry) {
		// Due for refresh, still valid: the refresh goes on behind it. A
		// token still valid is better than none while the authorization
		// server is away.
		tok := c.token
		c.mu.Unlock()
		return tok, nil
	}
	c.mu.Unlock()
	select {
	case <-wait:
	case <-ctx.Done():
		return "", fmt.Errorf("%w: waiting for the token endpoint %s: %w", ErrTokenEndpoint, c.endpoint, ctx.Err())
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.token != "" && c.now().Before(c.expiry) {
		return c.token, nil
	}
	if c.lastErr != nil {
		return "", c.lastErr
	}
	return "", fmt.Errorf("%w: token endpoint %s: the token lapsed as it came", ErrTokenEndpoint, c.endpoint)
}

// heldError is why a caller gets no token while the next fetch is
// held. c.mu is held.
func (c *ClientCredentials) heldError(now time.Time) error {
	in := c.hold.Sub(now).Round(time.Millisecond)
	if c.lastErr != nil {
		return fmt.Errorf("%w (asked again in %s)", c.lastErr, in)
	}
	return fmt.Errorf("%w: token endpoint %s: the upstream refused the token got %s ago, as it refused the one before; another is fetched in %s",
		ErrTokenEndpoint, c.endpoint, now.Sub(c.fetched).Round(time.Millisecond), in)
}

// fetchShared fetches a token for every caller, stores it (or why not)
// and closes done.
func (c *ClientCredentials) fetchShared(done chan struct{}) {
	ctx, cancel := context.WithTimeout(context.Background(), fetchTimeout)
	defer cancel()
	tok, life, err := c.fetch(ctx)
	c.mu.Lock()
	defer c.mu.Unlock()
	defer close(done)
	c.inflight = nil
	c.lastErr = err
	now := c.now()
	if err != nil {
		c.hold = now.Add(minFetchInterval)
		return
	}
	early := refreshBefore
	if life/2 < early {
		early = life / 2
	}
	c.token, c.expiry, c.refresh = tok, now.Add(life), now.Add(life-early)
	c.fetched, c.replacement, c.dropped = now, c.dropped, false
}

// Invalidate drops token if it is the cached one: the upstream refused it
// (revoked, rotated keys), so the next call fetches another. A token
// refused within minFetchInterval of replacing one refused before says
// the upstream takes none of the endpoint's tokens (their audience or
// scopes): the next is fetched minFetchInterval after it was, not at the
// next call, the call after it, and so on.
func (c *ClientCredentials) Invalidate(token string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if token == "" || c.token != token {
		return
	}
	c.token, c.dropped = "", true
	if c.replacement && c.now().Sub(c.fetched) < minFetchInterval {
		c.hold = c.fetched.Add(minFetchInterval)
	}
}

// ErrTokenEndpoint wraps every failure to get a token.
var ErrTokenEndpoint = errors.New("cannot get an access token for the upstream")

// fetch asks the token endpoint for a token and returns it with its
// lifetime. Errors name the endpoint (safeURL), never the secret.
func (c *ClientCredentials) fetch(ctx context.Context) (string, time.Duration, error) {
	form := url.Values{"grant_type": {"client_credentials"}}
	if len(c.cfg.Scopes) > 0 {
		form.Set("scope", strings.Join(c.cfg.Scopes, " "))
	}
	if c.cfg.Resource != "" {
		form.Set("resource", c.cfg.Resource)
	}
	if c.cfg.Audience != "" {
		form.Set("audience", c.cfg.Audience)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.cfg.TokenURL, strings.NewReader(form.Encode()))
	if ue := (*url.Error)(nil); errors.As(err, &ue) {
		return "", 0, fmt.Errorf("%w: token endpoint %s: %v", ErrTokenEndpoint, c.endpoint, ue.Err)
	}
	if err != nil {
		return "", 0, fmt.Errorf("%w: token endpoint %s: %v", ErrTokenEndpoint, c.endpoint, err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	// RFC 6749 §2.3.1: the id and secret are form-encoded before Basic.
	req.SetBasicAuth(url.QueryEscape(c.cfg.ClientID), url.QueryEscape(c.cfg.ClientSecret))
	resp, err := c.client.Do(req)
	if re := (*redirectError)(nil); errors.As(err, &re) {
		// Not Client.Do's error: it names the Location whole.
		return "", 0, fmt.Errorf("%w: token endpoint %s: %v", ErrTokenEndpoint, c.endpoint, re)
	}
	if ue := (*url.Error)(nil); errors.As(err, &ue) {
		// Client.Do's error names the URL with its query.
		return "", 0, fmt.Errorf("%w: token endpoint %s: %v", ErrTokenEndpoint, c.endpoint, ue.Err)
	}
	if err != nil {
		return "", 0, fmt.Errorf("%w: token endpoint %s: %v", ErrTokenEndpoint, c.endpoint, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxTokenResponse))
	if err != nil {
		return "", 0, fmt.Errorf("%w: token endpoint %s: %v", ErrTokenEndpoint, c.endpoint, err)
	}
	var tr struct {
		AccessToken string          `json:"access_token"`
		TokenType   string          `json:"token_type"`
		ExpiresIn   json.Number     `json:"expires_in"`
		Error       string          `json:"error"`
		Description json.RawMessage `json:"error_description"`
	}
	jerr := json.Unmarshal(b, &tr)
	if resp.StatusCode != http.StatusOK {
		msg := fmt.Sprintf("HTTP %d", resp.StatusCode)
		if jerr == nil && tr.Error != "" {
			msg += " " + tr.Error // RFC 6749 §5.2: invalid_client, invalid_scope, …
		}
		return "", 0, fmt.Errorf("%w: token endpoint %s: %s", ErrTokenEndpoint, c.endpoint, msg)
	}
	if jerr != nil || tr.AccessToken == "" {
		return "", 0, fmt.Errorf("%w: token endpoint %s: the answer has no access_token", ErrTokenEndpoint, c.endpoint)
	}
	if !strings.EqualFold(tr.TokenType, "bearer") {
		return "", 0, fmt.Errorf("%w: token endpoint %s: token_type %q, want Bearer", ErrTokenEndpoint, c.endpoint, tr.TokenType)
	}
	life := time.Hour // RFC 6749 §5.1: expires_in is RECOMMENDED; without it, assume an hour and let a 401 invalidate it
	if tr.ExpiresIn != "" {
		n, err := tr.ExpiresIn.Int64()
		if err != nil || n <= 0 {
			return "", 0, fmt.Errorf("%w: token endpoint %s: expires_in %q is not a positive number of seconds", ErrTokenEndpoint, c.endpoint, tr.ExpiresIn)
		}
		life = maxTokenLife
		if n < int64(maxTokenLife/time.Second) {
			life = time.Duration(n) * time.Second
		}
	}
	return tr.AccessToken, life, nil
}

// Transport adds Authorization: Bearer with a token from Tokens to every
// request it sends through Base (nil: a clone of
// http.DefaultTransport), replacing any Authorization the request had. A
// 401 answer invalidates the token, so the next request gets another;
// the request itself is not retried.
type Transport struct {
	Base   http.RoundTripper
	Tokens *ClientCredentials

	once sync.Once
	base http.RoundTripper
}

// RoundTrip implements http.RoundTripper.
func (t *Transport) RoundTrip(r *http.Request) (*http.Response, error) {
	tok, err := t.Tokens.Token(r.Context())
	if err != nil {
		if r.Body != nil {
			r.Body.Close()
		}
		return nil, err
	}
	r2 := r.Clone(r.Context())
	r2.Header.Set("Authorization", "Bearer "+tok)
	resp, err := t.baseTransport().RoundTrip(r2)
	if err == nil && resp.StatusCode == http.StatusUnauthorized {
		t.Tokens.Invalidate(tok)
	}
	return resp, err
}

func (t *Transport) baseTransport() http.RoundTripper {
	t.once.Do(func() {
		t.base = t.Base
		if t.base == nil {
			t.base = http.DefaultTransport.(*http.Transport).Clone()
		}
	})
	return t.base
}

// CloseIdleConnections closes the idle connections of the base transport.
func (t *Transport) CloseIdleConnections() {
	type closer interface{ CloseIdleConnections() }
	if c, ok := t.baseTransport().(closer); ok {
		c.CloseIdleConnections()
	}
}
