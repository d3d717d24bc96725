package gateway

import (
	"bytes"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/sluicehq/sluice/intercept"
)

// TestAttackParamHeaderUnderscore (attacker review): the gateway drops the
// client's Mcp-Param-* headers and writes them from the decided arguments,
// but a header spelt with underscores (Mcp_Param_Tag) went on as the client
// sent it. Whatever reads headers as CGI, WSGI or nginx's $http_ variables
// do (lower case, '-' and '_' alike) takes it for Mcp-Param-Tag: with the
// argument absent from the body, the gateway writes none, and the router
// routes on the client's value. Such spellings are dropped too.
func TestAttackParamHeaderUnderscore(t *testing.T) {
	var executed sync.Map
	us := regionBackend(t, "us", &executed)
	var mu sync.Mutex
	var seen []string // every header a CGI-style reader takes for Mcp-Param-*
	lb := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		if r.Header.Get("Mcp-Method") == "tools/call" {
			mu.Lock()
			for k, vs := range r.Header {
				if strings.HasPrefix(strings.ReplaceAll(strings.ToLower(k), "_", "-"), "mcp-param-") {
					seen = append(seen, k+": "+strings.Join(vs, ","))
				}
			}
			mu.Unlock()
		}
		u, _ := url.Parse(us.URL)
		httputil.NewSingleHostReverseProxy(u).ServeHTTP(w, r)
	}))
	t.Cleanup(lb.Close)
	g, err := New(Options{Upstreams: []Upstream{{Name: "bank", URL: lb.URL + "/mcp"}}}, &intercept.Interceptor{Decider: usOnlyPolicy(t)}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	gw := httptest.NewServer(g.Handler())
	t.Cleanup(func() { closeServed(t, gw, g) })
	meta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"m","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}}`
	if status, _, body := post(t, gw.URL+"/mcp/bank", modernHeaders("tools/list", ""), `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{`+meta+`}}`); status != 200 || !strings.Contains(body, "transfer") {
		t.Fatalf("tools/list: %d %s", status, body)
	}
	hdr := modernHeaders("tools/call", "transfer")
	hdr["Mcp-Param-Region"] = "us"
	hdr["Mcp_Param_Tag"] = "SMUGGLED"
	hdr["mcp_param_region"] = "eu"
	_, _, body := post(t, gw.URL+"/mcp/bank", hdr, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"transfer","arguments":{"region":"us","amount":5},`+meta+`}}`)
	// Refused now (TestAttackHeaderUnderscoreTwin): mcp_param_region is a
	// second Region to a CGI-style reader in front of the gateway too.
	if !strings.Contains(body, "-32020") {
		t.Fatalf("the US transfer with underscored twins: %s, want the header mismatch (-32020)", body)
	}
	// What no check refuses (a GET, a DELETE) still goes without them.
	dst := http.Header{}
	copyHeaders(dst, http.Header{"Mcp_param_tag": {"SMUGGLED"}, "Mcp-Param-Region": {"eu"}, "X-Ok": {"1"}}, intercept.IsParamHeader)
	if len(dst) != 1 || dst.Get("X-Ok") != "1" {
		t.Errorf("copied %v, want X-Ok alone", dst)
	}
	mu.Lock()
	defer mu.Unlock()
	for _, h := range seen {
		if h != "Mcp-Param-Region: us" {
			t.Errorf("the router got %q, which a CGI-style reader takes for an Mcp-Param header; policy decided on region \"us\" and no tag", h)
		}
	}
}
