package main

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
)

// testAS is an OAuth 2.0 authorization server with only what an MCP
// client's client-credentials flow asks of it: RFC 8414 metadata, a token
// endpoint (client_secret_basic, RFC 8707 resource as the audience) and
// the JWKS its ES256 tokens verify with. It records every request.
type testAS struct {
	t       testing.TB
	srv     *httptest.Server
	key     jose.JSONWebKey
	clients map[string]string // client_id -> secret
	// withdrawn: the JWKS publishes next in place of key (the issuer
	// rotated key out).
	withdrawn atomic.Bool
	next      jose.JSONWebKey

	mu  sync.Mutex
	log []string // "METHOD /path", and for the token endpoint the form
}

func newTestAS(t testing.TB, clients map[string]string) *testAS {
	priv, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	next, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	as := &testAS{t: t, clients: clients, key: jose.JSONWebKey{Key: priv, KeyID: "as-1", Algorithm: "ES256", Use: "sig"},
		next: jose.JSONWebKey{Key: next, KeyID: "as-2", Algorithm: "ES256", Use: "sig"}}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /.well-known/oauth-authorization-server", func(w http.ResponseWriter, r *http.Request) {
		u := as.srv.URL
		writeJSON(w, http.StatusOK, map[string]any{
			"issuer": u, "authorization_endpoint": u + "/authorize", "token_endpoint": u + "/token", "jwks_uri": u + "/jwks",
			"response_types_supported": []string{"code"}, "grant_types_supported": []string{"client_credentials"},
			"token_endpoint_auth_methods_supported": []string{"client_secret_basic"},
		})
	})
	mux.HandleFunc("GET /jwks", func(w http.ResponseWriter, r *http.Request) {
		if as.withdrawn.Load() {
			writeJSON(w, http.StatusOK, jose.JSONWebKeySet{Keys: []jose.JSONWebKey{as.next.Public()}})
			return
		}
		writeJSON(w, http.StatusOK, jose.JSONWebKeySet{Keys: []jose.JSONWebKey{as.key.Public()}})
	})
	mux.HandleFunc("POST /token", func(w http.ResponseWriter, r *http.Request) {
		if err := r.ParseForm(); err != nil {
			writeJSON(w, http.StatusBadRequest, map[string]string{"error": "invalid_request"})
			return
		}
		as.record("POST /token grant_type=" + r.PostForm.Get("grant_type") + " resource=" + r.PostForm.Get("resource"))
		id, secret, ok := r.BasicAuth()
		switch {
		case !ok || as.clients[id] == "" || as.clients[id] != secret:
			writeJSON(w, http.StatusUnauthorized, map[string]string{"error": "invalid_client"})
		case r.PostForm.Get("grant_type") != "client_credentials":
			writeJSON(w, http.StatusBadRequest, map[string]string{"error": "unsupported_grant_type"})
		case r.PostForm.Get("resource") == "":
			writeJSON(w, http.StatusBadRequest, map[string]string{"error": "invalid_target"})
		default:
			writeJSON(w, http.StatusOK, map[string]any{"token_type": "Bearer", "expires_in": 3600,
				"access_token": as.sign(map[string]any{"sub": id, "aud": r.PostForm.Get("resource"), "azp": id})})
		}
	})
	as.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/token" {
			as.record(r.Method + " " + r.URL.Path)
		}
		mux.ServeHTTP(w, r)
	}))
	t.Cleanup(as.srv.Close)
	return as
}

func (as *testAS) record(s string) {
	as.mu.Lock()
	as.log = append(as.log, s)
	as.mu.Unlock()
}

func (as *testAS) requests() []string {
	as.mu.Lock()
	defer as.mu.Unlock()
	return append([]string(nil), as.log...)
}

// sign returns a token from this issuer, valid for an hour, with claims
// over iss, iat and exp (a nil value removes a claim).
func (as *testAS) sign(claims map[string]any) string {
	now := time.Now()
	base := map[string]any{"iss": as.srv.URL, "iat": now.Unix(), "exp": now.Add(time.Hour).Unix(), "scope": "mcp:tools"}
	for k, v := range claims {
		if v == nil {
			delete(base, k)
		} else {
			base[k] = v
		}
	}
	s, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.ES256, Key: as.key.Key},
		(&jose.SignerOptions{}).WithType("JWT").WithHeader("kid", as.key.KeyID))
	if err != nil {
		as.t.Fatal(err)
	}
	tok, err := jwt.Signed(s).Claims(base).Serialize()
	if err != nil {
		as.t.Fatal(err)
	}
	return tok
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// jwtServe starts serve in front of the demo server with JWT auth from
// as, on an address chosen first so that the audience can name it. The
// policy denies web_search to the principal "denied-agent" and counts
// upstream requests that carry an Authorization header.
func jwtServe(t *testing.T, as *testAS) (base string, leaked *atomic.Int32) {
	t.Helper()
	agents, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := agents.Addr().String()
	base = "http://" + addr
	yaml := fmt.Sprintf(`listen: %s
policy:
  default: allow
  result_mode: tool_result
  rules:
    - id: not-for-denied-agent
      match: {match_tool: web_search}
      when: principal.method == "jwt" && principal.id == "denied-agent"
      decision: deny
      reason: denied-agent may not search
auth:
  mode: jwt
  jwt:
    issuer: %s
    audience: [%s/mcp/demo, %s/sse/demo, %s/ws/demo]
    jwks_url: %s/jwks
    required_scopes: [mcp:tools]
`, addr, as.srv.URL, base, base, base, as.srv.URL)
	leaked = new(atomic.Int32)
	startServeOn(t, agents, yaml, func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Header.Get("Authorization") != "" {
				leaked.Add(1)
			}
			h.ServeHTTP(w, r)
		})
	})
	return base, leaked
}

// requireE2ENode skips (fails under CI=true) when the TypeScript SDK is
// not installed in e2e/.
func requireE2ENode(t *testing.T) string {
	t.Helper()
	dir := "../../e2e"
	if _, err := os.Stat(dir + "/node_modules/@modelcontextprotocol/sdk"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("e2e/node_modules missing under CI: run npm ci in e2e/ (%v)", err)
		}
		t.Skip("e2e/node_modules missing: run `npm ci` in e2e/")
	}
	return dir
}

// runTSClient runs e2e/client.mjs and returns its JSON output as a string.
func runTSClient(t *testing.T, dir string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", append([]string{"client.mjs"}, args...)...)
	cmd.Dir = dir
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if !json.Valid(stdout.Bytes()) {
		t.Fatalf("client.mjs %v: %v; stdout %q; stderr:\n%s", args, err, stdout.String(), stderr.String())
	}
	return stdout.String()
}

// The official TypeScript SDK client, with its client-credentials
// provider and no token to start with, gets 401 from `sluice serve`,
// follows WWW-Authenticate to the protected resource metadata, asks the
// authorization server named there for its metadata and a token for the
// resource, and makes its calls with that token: the principal is its
// client id (policy sees it), and the token never reaches the upstream.
// A client the authorization server does not know gets no session.
func TestTypeScriptSDKOAuth(t *testing.T) {
	dir := requireE2ENode(t)
	as := newTestAS(t, map[string]string{"ts-agent": "s3cret", "denied-agent": "s3cret2"})
	base, leaked := jwtServe(t, as)
	for _, tc := range []struct{ transport, path string }{
		{"streamable-http", "/mcp/demo"},
		{"sse", "/sse/demo"},
	} {
		t.Run(tc.transport, func(t *testing.T) {
			run := func(client string) string {
				return runTSClient(t, dir, "--transport", tc.transport, "--url", base+tc.path,
					"--oauth-client", client, "--oauth-issuer", as.srv.URL, "--scenario", "calls",
					"--call", `echo={"message":"hello through oauth"}`, "--call", `web_search={"query":"q"}`)
			}
			before := len(as.requests())
			out := run("ts-agent:s3cret")
			if !strings.Contains(out, `"ok":true`) || !strings.Contains(out, "hello through oauth") {
				t.Fatalf("ts-agent: got %s, want its echo", out)
			}
			if strings.Contains(out, "denied-agent may not search") {
				t.Errorf("ts-agent: got %s, want web_search allowed", out)
			}
			want := []string{"GET /.well-known/oauth-authorization-server",
				"POST /token grant_type=client_credentials resource=" + base + tc.path}
			if got := as.requests()[before:]; strings.Join(got, "\n") != strings.Join(want, "\n") {
				t.Errorf("authorization server saw %q, want %q", got, want)
			}
			if out := run("denied-agent:s3cret2"); !strings.Contains(out, "denied-agent may not search") {
				t.Errorf("denied-agent: got %s, want web_search denied by principal.id", out)
			}
			if out := run("ts-agent:wrong"); strings.Contains(out, `"ok":true`) || strings.Contains(out, "hello through oauth") {
				t.Errorf("a client with a wrong secret: got %s, want initialize to fail", out)
			}
		})
	}
	if n := leaked.Load(); n != 0 {
		t.Errorf("%d upstream requests carried an Authorization header, want none", n)
	}
}

// mcp-go clients (Streamable HTTP session, SSE), a WebSocket client and
// 2026-07-28 stateless requests carry a JWT from the test IdP's JWKS
// through `sluice serve`: the token's subject is the agent whatever name
// the client gives itself, and the token never reaches the upstream. A
// token for another audience, or an expired one, gets a 401 before the
// upstream sees anything.
func TestJWTClients(t *testing.T) {
	as := newTestAS(t, nil)
	base, leaked := jwtServe(t, as)
	aud := []string{base + "/mcp/demo", base + "/sse/demo", base + "/ws/demo"}
	allowed := as.sign(map[string]any{"sub": "go-agent", "aud": aud})
	denied := as.sign(map[string]any{"sub": "denied-agent", "aud": aud})
	for name, conn := range transports {
		t.Run(name, func(t *testing.T) {
			if got := conn(t, base, allowed, "denied-agent")("web_search", search); strings.Contains(got, "may not search") || !strings.Contains(got, "Top results") {
				t.Errorf("go-agent calling itself denied-agent: got %s, want the search result", got)
			}
			if got := conn(t, base, denied, "go-agent")("web_search", search); !strings.Contains(got, "denied-agent may not search") {
				t.Errorf("denied-agent calling itself go-agent: got %s, want the deny", got)
			}
		})
	}
	if n := leaked.Load(); n != 0 {
		t.Errorf("%d upstream requests carried an Authorization header, want none", n)
	}
	for name, tok := range map[string]string{
		"another audience": as.sign(map[string]any{"sub": "go-agent", "aud": "https://other.example/mcp"}),
		"expired":          as.sign(map[string]any{"sub": "go-agent", "aud": aud, "exp": time.Now().Add(-time.Hour).Unix()}),
		"no scope":         as.sign(map[string]any{"sub": "go-agent", "aud": aud, "scope": nil}),
	} {
		got := modernCallWithKey(t, base+"/mcp/demo", tok, "go-agent", "echo", `{"message":"x"}`)
		if !strings.HasPrefix(got, "401 ") && !strings.HasPrefix(got, "403 ") {
			t.Errorf("%s: got %s, want 401 or 403", name, got)
		}
	}
}

// admin_jwt admits to the admin API a JWT with the admin role beside the
// admin token; a token without the role, an agent's token (another
// audience) and none are refused. A config whose admin_jwt names no role
// or shares the agents' audience does not load.
func TestAdminJWT(t *testing.T) {
	as := newTestAS(t, nil)
	r := startServe(t, fmt.Sprintf(`policy: {default: allow}
admin_token: the-admin-token
admin_jwt:
  issuer: %s
  audience: [sluice-admin-api]
  jwks_url: %s/jwks
  required_claims: {roles: sluice-admin}
`, as.srv.URL, as.srv.URL))
	get := func(bearer string) int {
		req, _ := http.NewRequest(http.MethodGet, "http://"+r.admin+"/admin/approvals", nil)
		if bearer != "" {
			req.Header.Set("Authorization", "Bearer "+bearer)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	for _, tt := range []struct {
		name, bearer string
		want         int
	}{
		{"admin token", "the-admin-token", 200},
		{"JWT with the admin role", as.sign(map[string]any{"sub": "ops", "aud": "sluice-admin-api", "roles": []string{"viewer", "sluice-admin"}}), 200},
		{"JWT without the role", as.sign(map[string]any{"sub": "ops", "aud": "sluice-admin-api", "roles": []string{"viewer"}}), 401},
		{"an agent's JWT", as.sign(map[string]any{"sub": "agent", "aud": "https://sluice.example/mcp", "roles": []string{"sluice-admin"}}), 401},
		{"expired JWT", as.sign(map[string]any{"sub": "ops", "aud": "sluice-admin-api", "roles": "sluice-admin", "exp": time.Now().Add(-time.Hour).Unix()}), 401},
		{"none", "", 401},
	} {
		if got := get(tt.bearer); got != tt.want {
			t.Errorf("%s: got %d, want %d", tt.name, got, tt.want)
		}
	}
	// The console: signed in with an admin JWT, the operator is its
	// subject, whatever name is typed; a JWT without the role signs no one in.
	jar, _ := cookiejar.New(nil)
	browser := &http.Client{Jar: jar, CheckRedirect: noRedirect}
	resp, err := browser.PostForm("http://"+r.admin+"/console/login", url.Values{"name": {"someone-else"},
		"token": {as.sign(map[string]any{"sub": "ops-lead", "aud": "sluice-admin-api", "roles": []string{"sluice-admin"}})}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("console sign-in with an admin JWT: %d", resp.StatusCode)
	}
	resp, err = browser.Get("http://" + r.admin + resp.Header.Get("Location"))
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(page), "<span>ops-lead</span>") || strings.Contains(string(page), "someone-else") {
		t.Errorf("console operator after a JWT sign-in: %.600s", page)
	}
	resp, _ = (&http.Client{CheckRedirect: noRedirect}).PostForm("http://"+r.admin+"/console/login", url.Values{"name": {"x"},
		"token": {as.sign(map[string]any{"sub": "ops", "aud": "sluice-admin-api", "roles": []string{"viewer"}})}})
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("console sign-in with a JWT without the role: %d", resp.StatusCode)
	}
	for _, tt := range []struct{ yaml, want string }{
		{"admin_jwt: {issuer: https://i, audience: [a], jwks_url: https://i/k}\n", "admin_jwt: names no admin role"},
		{"admin_jwt: {issuer: https://i, audience: [a], required_scopes: [admin]}\n", "admin_jwt.jwks_url"},
		{"auth: {mode: jwt, jwt: {issuer: https://i, audience: [a], jwks_url: https://i/k}}\nadmin_jwt: {issuer: https://i, audience: [a], jwks_url: https://i/k, required_scopes: [admin]}\n", "admin_jwt.audience"},
	} {
		if _, err := parseConfig("c.yaml", []byte(tt.yaml)); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%q: got %v, want an error naming %s", tt.yaml, err, tt.want)
		}
	}
}
