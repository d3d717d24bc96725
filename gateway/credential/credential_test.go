package credential

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// tokenServer is a token endpoint that issues tok-1, tok-2, … valid for
// expiresIn seconds to client "sluice" with secret "s3cret:+/".
type tokenServer struct {
	srv       *httptest.Server
	issued    atomic.Int32
	expiresIn atomic.Int32
	fail      atomic.Bool
	mu        sync.Mutex
	forms     []string
}

func newTokenServer(t *testing.T) *tokenServer {
	ts := &tokenServer{}
	ts.expiresIn.Store(300)
	ts.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.ParseForm()
		ts.mu.Lock()
		ts.forms = append(ts.forms, r.PostForm.Encode())
		ts.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		id, secret, _ := r.BasicAuth()
		switch {
		case ts.fail.Load():
			w.WriteHeader(http.StatusServiceUnavailable)
			fmt.Fprint(w, `{"error":"temporarily_unavailable"}`)
		case id != "sluice" || secret != "s3cret%3A%2B%2F": // form-encoded, RFC 6749 §2.3.1
			w.WriteHeader(http.StatusUnauthorized)
			fmt.Fprint(w, `{"error":"invalid_client"}`)
		default:
			n := ts.issued.Add(1)
			fmt.Fprintf(w, `{"access_token":"tok-%d","token_type":"Bearer","expires_in":%d}`, n, ts.expiresIn.Load())
		}
	}))
	t.Cleanup(ts.srv.Close)
	return ts
}

func (ts *tokenServer) config() ClientCredentialsConfig {
	return ClientCredentialsConfig{TokenURL: ts.srv.URL + "/token", ClientID: "sluice", ClientSecret: "s3cret:+/",
		Scopes: []string{"mcp:read", "mcp:write"}, Resource: "https://mcp.example/mcp"}
}

func TestClientCredentialsCache(t *testing.T) {
	ts := newTokenServer(t)
	clk := &clock{t: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
	c := NewClientCredentials(ts.config(), Deps{Now: clk.Now})
	ctx := context.Background()
	get := func() string {
		t.Helper()
		tok, err := c.Token(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	if got := get(); got != "tok-1" {
		t.Fatalf("first token: got %s, want tok-1", got)
	}
	if want := "grant_type=client_credentials&resource=https%3A%2F%2Fmcp.example%2Fmcp&scope=mcp%3Aread+mcp%3Awrite"; ts.forms[0] != want {
		t.Errorf("token request: got %s, want %s", ts.forms[0], want)
	}
	clk.Advance(3 * time.Minute)
	if got := get(); got != "tok-1" || ts.issued.Load() != 1 {
		t.Errorf("within its lifetime: got %s after %d fetches, want tok-1 from the cache", got, ts.issued.Load())
	}
	clk.Advance(time.Minute + time.Second) // 4m01s of 5m: inside the last minute
	if got := get(); got != "tok-1" {
		t.Errorf("a minute before expiry: got %s, want tok-1, still valid, while tok-2 is fetched", got)
	}
	if got := refreshed(t, get, "tok-1"); got != "tok-2" {
		t.Errorf("a minute before expiry, once fetched: got %s, want a fresh tok-2", got)
	}
	ts.fail.Store(true)
	clk.Advance(4*time.Minute + 30*time.Second) // due for refresh, not expired
	if got := get(); got != "tok-2" {
		t.Errorf("token endpoint down, token still valid: got %s, want tok-2 kept", got)
	}
	clk.Advance(time.Minute) // expired
	if _, err := c.Token(ctx); !errors.Is(err, ErrTokenEndpoint) || !strings.Contains(err.Error(), "HTTP 503 temporarily_unavailable") {
		t.Errorf("token endpoint down, token expired: got %v, want ErrTokenEndpoint naming the status", err)
	}
	ts.fail.Store(false)
	clk.Advance(minFetchInterval) // a failed fetch holds the next that long
	tok := get()
	c.Invalidate(tok)
	if got := get(); got == tok {
		t.Errorf("after Invalidate: got %s again, want a new token", got)
	}

	t.Run("short lifetime refreshes at half", func(t *testing.T) {
		ts.expiresIn.Store(30)
		c := NewClientCredentials(ts.config(), Deps{Now: clk.Now})
		first, _ := c.Token(ctx)
		clk.Advance(14 * time.Second)
		if again, _ := c.Token(ctx); again != first {
			t.Errorf("at 14s of 30s: got %s, want %s", again, first)
		}
		clk.Advance(2 * time.Second)
		get := func() string { tok, _ := c.Token(ctx); return tok }
		if again := refreshed(t, get, first); again == first {
			t.Errorf("at 16s of 30s: got %s again, want a new token", again)
		}
	})
}

// refreshed calls get until it returns another token than old (a
// refresh fetched behind the valid token), for up to 5s.
func refreshed(t *testing.T, get func() string, old string) string {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(time.Millisecond) {
		if tok := get(); tok != old || time.Now().After(deadline) {
			return tok
		}
	}
}

// TestClientCredentialsStalledEndpoint: a token endpoint that accepts
// the request and never answers held every call to its upstream: Token
// fetched under one lock with the first caller's context, so the callers
// queued behind it, each fetching again in turn for the client's 10 s
// timeout, the k-th waiting k times that, and a lock does not heed a
// caller's context. A token due for refresh but valid waited the same.
// Now callers share one fetch, wait no longer than their context, and a
// valid token is used at once.
func TestClientCredentialsStalledEndpoint(t *testing.T) {
	ts := newTokenServer(t)
	clk := &clock{t: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
	c := NewClientCredentials(ts.config(), Deps{Now: clk.Now})
	release := make(chan struct{})
	var stalled atomic.Bool
	stall := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if stalled.Load() {
			select {
			case <-release:
			case <-r.Context().Done():
			}
			return
		}
		ts.srv.Config.Handler.ServeHTTP(w, r)
	}))
	t.Cleanup(stall.Close)
	t.Cleanup(func() { close(release) }) // before stall.Close, which waits for its handlers
	c.cfg.TokenURL = stall.URL + "/token"
	if _, err := c.Token(context.Background()); err != nil {
		t.Fatal(err)
	}
	stalled.Store(true)

	// Due for refresh, still valid: no wait.
	clk.Advance(4*time.Minute + 30*time.Second)
	start := time.Now()
	for range 10 {
		if tok, err := c.Token(context.Background()); tok != "tok-1" || err != nil {
			t.Fatalf("due for refresh, endpoint stalled: got %q, %v; want tok-1", tok, err)
		}
	}
	if took := time.Since(start); took > time.Second {
		t.Errorf("10 calls with a valid token due for refresh, the endpoint stalled: took %s, want no wait", took.Round(time.Millisecond))
	}

	// Expired: each caller waits for the one fetch, up to its context.
	clk.Advance(time.Minute)
	const n = 8
	var wg sync.WaitGroup
	took := make([]time.Duration, n)
	for i := range n {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
			defer cancel()
			start := time.Now()
			if _, err := c.Token(ctx); !errors.Is(err, ErrTokenEndpoint) {
				t.Errorf("caller %d, token expired, endpoint stalled: got %v, want ErrTokenEndpoint", i, err)
			}
			took[i] = time.Since(start)
		})
	}
	wg.Wait()
	for i, d := range took {
		if d > 2*time.Second {
			t.Errorf("caller %d of %d, token expired, endpoint stalled: waited %s, want its context's 300ms", i, n, d.Round(time.Millisecond))
		}
	}
}

func TestClientCredentialsErrors(t *testing.T) {
	ts := newTokenServer(t)
	cfg := ts.config()
	cfg.ClientSecret = "wrong-secret"
	_, err := NewClientCredentials(cfg, Deps{}).Token(context.Background())
	if !errors.Is(err, ErrTokenEndpoint) || !strings.Contains(err.Error(), "invalid_client") || strings.Contains(err.Error(), "wrong-secret") {
		t.Errorf("bad secret: got %v, want invalid_client without the secret", err)
	}
	for _, body := range []string{`{"token_type":"Bearer"}`, `{"access_token":"x","token_type":"mac"}`, `{"access_token":"x","token_type":"Bearer","expires_in":-5}`, `not json`} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, body) }))
		cfg := ts.config()
		cfg.TokenURL = srv.URL
		if _, err := NewClientCredentials(cfg, Deps{}).Token(context.Background()); !errors.Is(err, ErrTokenEndpoint) {
			t.Errorf("answer %s: got %v, want ErrTokenEndpoint", body, err)
		}
		srv.Close()
	}
}

// Concurrent callers share one fetch.
func TestClientCredentialsOneFetch(t *testing.T) {
	ts := newTokenServer(t)
	c := NewClientCredentials(ts.config(), Deps{})
	var wg sync.WaitGroup
	for range 20 {
		wg.Go(func() {
			if _, err := c.Token(context.Background()); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if n := ts.issued.Load(); n != 1 {
		t.Errorf("20 concurrent callers: %d fetches, want 1", n)
	}
}

// The Transport replaces the request's Authorization with the token and
// invalidates a token the upstream refuses.
func TestTransport(t *testing.T) {
	ts := newTokenServer(t)
	var accept atomic.Value
	accept.Store("Bearer tok-1")
	var seen []string
	var mu sync.Mutex
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.Header.Get("Authorization"))
		mu.Unlock()
		if r.Header.Get("Authorization") != accept.Load().(string) {
			w.WriteHeader(http.StatusUnauthorized)
		}
	}))
	defer up.Close()
	client := &http.Client{Transport: &Transport{Tokens: NewClientCredentials(ts.config(), Deps{})}}
	do := func() int {
		req, _ := http.NewRequest(http.MethodPost, up.URL, strings.NewReader("{}"))
		req.Header.Set("Authorization", "Bearer agent-token")
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if got := do(); got != 200 {
		t.Fatalf("first request: got %d", got)
	}
	accept.Store("Bearer tok-2") // the upstream no longer takes tok-1
	if got := do(); got != 401 {
		t.Fatalf("with a revoked token: got %d, want 401", got)
	}
	if got := do(); got != 200 {
		t.Errorf("after a 401: got %d, want 200 with a new token", got)
	}
	if want := []string{"Bearer tok-1", "Bearer tok-1", "Bearer tok-2"}; strings.Join(seen, ",") != strings.Join(want, ",") {
		t.Errorf("upstream saw %v, want %v (never the agent's token)", seen, want)
	}
}

func TestValidate(t *testing.T) {
	ok := ClientCredentialsConfig{TokenURL: "https://idp/token", ClientID: "a", ClientSecret: "b"}
	for _, tt := range []struct {
		mut  func(*ClientCredentialsConfig)
		want string
	}{
		{func(c *ClientCredentialsConfig) { c.TokenURL = "" }, "u.oauth.token_url: missing"},
		{func(c *ClientCredentialsConfig) { c.TokenURL = "http://idp.example/token" }, "u.oauth.token_url"},
		{func(c *ClientCredentialsConfig) { c.ClientID = "" }, "u.oauth.client_id"},
		{func(c *ClientCredentialsConfig) { c.ClientSecret = "" }, "u.oauth.client_secret"},
		{func(c *ClientCredentialsConfig) { c.Resource = "/relative" }, "u.oauth.resource"},
	} {
		c := ok
		tt.mut(&c)
		if err := c.Validate("u.oauth"); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%+v: got %v, want an error naming %s", c, err, tt.want)
		}
	}
	if err := ok.Validate("u.oauth"); err != nil {
		t.Errorf("valid config: %v", err)
	}
}

// TestClientCredentialsRedirectKeepsSecret: a token endpoint that
// answers with a redirect to plain http on its own host (or to a
// subdomain) was followed with the client secret in Authorization: Go's
// client keeps the header for the same host and its subdomains, scheme
// or port aside, so the secret that token_url must send over https went
// in clear. Now a redirect is not followed.
func TestClientCredentialsRedirectKeepsSecret(t *testing.T) {
	var leaked atomic.Value
	leaked.Store("")
	plain := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if a := r.Header.Get("Authorization"); a != "" {
			leaked.Store(a)
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"access_token":"tok-plain","token_type":"Bearer","expires_in":300}`)
	}))
	defer plain.Close()
	redirector := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, plain.URL+"/token?x=1", http.StatusTemporaryRedirect)
	}))
	defer redirector.Close()
	cfg := ClientCredentialsConfig{TokenURL: redirector.URL + "/token", ClientID: "sluice", ClientSecret: "s3cret"}
	if err := cfg.Validate("oauth"); err != nil {
		t.Fatal(err)
	}
	tok, err := NewClientCredentials(cfg, Deps{Client: redirector.Client()}).Token(context.Background())
	if a := leaked.Load().(string); a != "" {
		t.Errorf("the redirect's plain-http target got Authorization %q: the client secret crossed the network in clear", a)
	}
	if tok != "" || !errors.Is(err, ErrTokenEndpoint) || !strings.Contains(err.Error(), "redirect") || strings.Contains(err.Error(), "x=1") {
		t.Errorf("token endpoint redirecting: got %q, %v; want ErrTokenEndpoint saying it redirected (without the Location's query)", tok, err)
	}
}

// TestClientCredentialsRefusedTokensNotRefetched: an upstream that
// refuses every token the gateway gets (its audience or scopes are not
// what the upstream wants) had each call fetch a new token, since each
// 401 dropped the one cached: an agent calling the upstream N times
// asked the token endpoint N times (an IdP that rate-limits or bills
// client-credentials grants then refused the gateway, for every agent).
// Now a token refused soon after it replaced a refused one holds the
// next fetch minFetchInterval after it.
func TestClientCredentialsRefusedTokensNotRefetched(t *testing.T) {
	ts := newTokenServer(t)
	clk := &clock{t: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusUnauthorized)
	}))
	defer up.Close()
	client := &http.Client{Transport: &Transport{Tokens: NewClientCredentials(ts.config(), Deps{Now: clk.Now})}}
	do := func() error {
		req, _ := http.NewRequest(http.MethodPost, up.URL, strings.NewReader("{}"))
		resp, err := client.Do(req)
		if err == nil {
			resp.Body.Close()
		}
		return err
	}
	for range 20 {
		_ = do()
	}
	if n := ts.issued.Load(); n != 2 {
		t.Errorf("20 calls to an upstream refusing every token: %d token fetches, want 2 (the token, and one to replace it)", n)
	}
	if err := do(); !errors.Is(err, ErrTokenEndpoint) || !strings.Contains(err.Error(), "refused") {
		t.Errorf("a call while the next fetch is held: got %v, want ErrTokenEndpoint saying the upstream refused the tokens", err)
	}
	clk.Advance(minFetchInterval)
	for range 20 {
		_ = do()
	}
	if n := ts.issued.Load(); n != 3 {
		t.Errorf("20 more calls %s later: %d token fetches in all, want 3", minFetchInterval, n)
	}
}

// TestClientCredentialsFailingEndpointNotHammered: a token endpoint that
// fails (down, 503, rate-limiting the gateway with 429) was asked again
// by every call that had no valid token, and by every call in a valid
// token's refresh window: N calls, N requests to an endpoint already
// failing. Now it is asked again minFetchInterval after a failure, and
// the calls between get its error at once.
func TestClientCredentialsFailingEndpointNotHammered(t *testing.T) {
	ts := newTokenServer(t)
	clk := &clock{t: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
	c := NewClientCredentials(ts.config(), Deps{Now: clk.Now})
	asked := func() int { ts.mu.Lock(); defer ts.mu.Unlock(); return len(ts.forms) }
	ts.fail.Store(true)
	for range 20 {
		if _, err := c.Token(context.Background()); !errors.Is(err, ErrTokenEndpoint) || !strings.Contains(err.Error(), "HTTP 503") {
			t.Fatalf("endpoint failing: got %v, want its error", err)
		}
	}
	if n := asked(); n != 1 {
		t.Errorf("20 calls, the token endpoint failing: asked %d times, want 1", n)
	}
	clk.Advance(minFetchInterval)
	ts.fail.Store(false)
	if tok, err := c.Token(context.Background()); tok != "tok-1" || err != nil {
		t.Fatalf("%s after the failure, the endpoint back: got %q, %v; want tok-1", minFetchInterval, tok, err)
	}

	// A valid token due for refresh, the endpoint failing: the token is
	// used, the endpoint asked once (in the background), not per call.
	ts.fail.Store(true)
	clk.Advance(4*time.Minute + 30*time.Second)
	before := asked()
	for range 20 {
		if tok, err := c.Token(context.Background()); tok != "tok-1" || err != nil {
			t.Fatalf("due for refresh, endpoint failing: got %q, %v; want tok-1", tok, err)
		}
		waitIdle(c)
	}
	if n := asked() - before; n != 1 {
		t.Errorf("20 calls in the refresh window, the endpoint failing: asked %d times, want 1", n)
	}
}

// waitIdle waits for c's fetch under way, if any, to end.
func waitIdle(c *ClientCredentials) {
	c.mu.Lock()
	w := c.inflight
	c.mu.Unlock()
	if w != nil {
		<-w
	}
}

// TestClientCredentialsErrorsKeepURLSecrets: an error getting a token
// reaches the agent whose call needed it (the gateway's JSON-RPC error
// quotes it), and it named token_url whole: a password in its user
// information or a key in its query went to the agent with it.
func TestClientCredentialsErrorsKeepURLSecrets(t *testing.T) {
	refuse := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusUnauthorized)
		fmt.Fprint(w, `{"error":"invalid_client"}`)
	}))
	defer refuse.Close()
	garbage := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, `not json`) }))
	defer garbage.Close()
	gone := httptest.NewServer(http.NotFoundHandler())
	goneURL := gone.URL
	gone.Close()
	for _, base := range []string{refuse.URL, garbage.URL, goneURL} {
		u := strings.Replace(base, "http://", "http://sluice:URLPASSWORD@", 1) + "/token?tenant=URLKEY"
		cfg := ClientCredentialsConfig{TokenURL: u, ClientID: "sluice", ClientSecret: "s3cret"}
		_, err := NewClientCredentials(cfg, Deps{}).Token(context.Background())
		if err == nil || strings.Contains(err.Error(), "URLPASSWORD") || strings.Contains(err.Error(), "URLKEY") || !strings.Contains(err.Error(), strings.TrimPrefix(base, "http://")+"/token") {
			t.Errorf("token endpoint %s: got %v; want an error naming the endpoint without its password or query", base, err)
		}
	}
}

// A token endpoint answering expires_in beyond what a time.Duration holds
// (about 292 years; here 10^10 s) overflowed the token's lifetime into
// the past: every call fetched again, and got "the token lapsed as it
// came". The lifetime is capped at maxTokenLife: the token is used, and
// replaced once a day.
func TestClientCredentialsHugeExpiresIn(t *testing.T) {
	var issued atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"access_token":"tok-%d","token_type":"Bearer","expires_in":10000000000}`, issued.Add(1))
	}))
	defer srv.Close()
	clk := &clock{t: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
	c := NewClientCredentials(ClientCredentialsConfig{TokenURL: srv.URL, ClientID: "sluice", ClientSecret: "s"}, Deps{Now: clk.Now})
	get := func() string {
		t.Helper()
		tok, err := c.Token(context.Background())
		if err != nil {
			t.Fatalf("expires_in 10^10 s: %v", err)
		}
		return tok
	}
	for range 3 {
		if got := get(); got != "tok-1" || issued.Load() != 1 {
			t.Fatalf("expires_in 10^10 s: got %s after %d fetches, want tok-1 from the cache", got, issued.Load())
		}
	}
	clk.Advance(24*time.Hour - refreshBefore + time.Second) // maxTokenLife
	if got := refreshed(t, get, "tok-1"); got != "tok-2" {
		t.Errorf("a day on: got %s, want tok-2, fetched as tok-1's capped lifetime ends", got)
	}
}
