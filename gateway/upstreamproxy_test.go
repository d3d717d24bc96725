package gateway

import (
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"

	"github.com/sluicehq/sluice/gateway/credential"
	"github.com/sluicehq/sluice/intercept"
)

// proxyChildEnv, set, makes TestOAuthUpstreamConnectsDirectly the child
// half of itself.
const proxyChildEnv = "SLUICE_TEST_PROXY_CHILD"

// TestOAuthUpstreamConnectsDirectly: with HTTP_PROXY set, an upstream
// with oauth: sent its calls, its access token in them, through that
// proxy (Go's default transport), while every other upstream connects
// directly (the gateway's own transport). Both connect directly now.
//
// Go reads the proxy variables once a process, so the gateway runs in a
// child process of this test binary, HTTP_PROXY pointing to a proxy this
// test records; the upstream is addressed as 0.0.0.0, which Go proxies
// (loopback names and addresses it never does) and which connects to the
// local host.
func TestOAuthUpstreamConnectsDirectly(t *testing.T) {
	if os.Getenv(proxyChildEnv) != "" {
		oauthUpstreamChild(t)
		return
	}
	var mu sync.Mutex
	var proxied []string
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		proxied = append(proxied, fmt.Sprintf("%s %s (Authorization %q)", r.Method, r.URL, r.Header.Get("Authorization")))
		mu.Unlock()
		http.Error(w, "proxy", http.StatusBadGateway)
	}))
	defer proxy.Close()
	cmd := exec.Command(os.Args[0], "-test.run=^TestOAuthUpstreamConnectsDirectly$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), proxyChildEnv+"=1", "HTTP_PROXY="+proxy.URL, "http_proxy="+proxy.URL, "NO_PROXY=", "no_proxy=")
	out, err := cmd.CombinedOutput()
	mu.Lock()
	defer mu.Unlock()
	if len(proxied) > 0 {
		t.Errorf("the proxy of HTTP_PROXY got %q; want every upstream connected directly", proxied)
	}
	if err != nil {
		t.Errorf("the gateway, HTTP_PROXY set: %v\n%s", err, out)
	}
}

// oauthUpstreamChild serves an upstream, behind a token check, as
// "plain" (a static Authorization) and "oauth" (a client-credentials
// token), and initializes a session on each.
func oauthUpstreamChild(t *testing.T) {
	if os.Getenv("HTTP_PROXY") == "" {
		t.Fatal("no HTTP_PROXY")
	}
	tokens := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"access_token":"oauth-token","token_type":"Bearer","expires_in":3600}`)
	}))
	defer tokens.Close()
	sdk := goSDKHTTPHandler()
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if a := r.Header.Get("Authorization"); a != "Bearer oauth-token" && a != "Bearer static-token" {
			http.Error(w, "no token", http.StatusUnauthorized)
			return
		}
		r.Host = "127.0.0.1" // the SDK refuses 0.0.0.0 (DNS rebinding)
		sdk.ServeHTTP(w, r)
	}))
	defer up.Close()
	u, _ := url.Parse(up.URL)
	u.Host = "0.0.0.0:" + u.Port()
	g, err := New(Options{Upstreams: []Upstream{
		{Name: "plain", URL: u.String() + "/mcp", Headers: map[string]string{"Authorization": "Bearer static-token"}},
		{Name: "oauth", URL: u.String() + "/mcp", OAuth: &credential.ClientCredentialsConfig{TokenURL: tokens.URL, ClientID: "sluice", ClientSecret: "s"}},
	}}, &intercept.Interceptor{Decider: permissive}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(g.Handler())
	defer closeServed(t, srv, g)
	for _, name := range []string{"plain", "oauth"} {
		code, _, body := post(t, srv.URL+"/mcp/"+name, nil, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}`)
		if code != http.StatusOK || !strings.Contains(body, `"serverInfo"`) {
			t.Errorf("initialize on %s, HTTP_PROXY set: HTTP %d %s; want the upstream's answer", name, code, body)
		}
	}
}
