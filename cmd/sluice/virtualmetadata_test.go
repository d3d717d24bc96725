package main

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"regexp"
	"strings"
	"testing"
)

// TestVirtualServerResourceMetadata: a virtual server is a protected
// resource of its own, as a route is: a request without a token to
// /mcp/{name} (or /sse/…, /ws/…) of a virtual server is challenged with
// the URL of its RFC 9728 metadata, and that URL answered 404, since only
// the upstreams' names were given to the authenticator: an MCP client
// following the challenge could not learn where to get a token for it.
func TestVirtualServerResourceMetadata(t *testing.T) {
	as := newTestAS(t, nil)
	agents, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	base := "http://" + agents.Addr().String()
	startServeOn(t, agents, fmt.Sprintf(`policy: {default: allow, result_mode: tool_result}
upstreams: [{name: demo, url: "http://127.0.0.1:1/mcp"}]
virtual_servers:
  - {name: all, upstreams: [demo]}
auth:
  mode: jwt
  jwt: {issuer: %s, audience: [%s/mcp/all], jwks_url: %s/jwks}
`, as.srv.URL, base, as.srv.URL), nil)

	challenge := regexp.MustCompile(`resource_metadata="([^"]+)"`)
	for _, path := range []string{"/mcp/all", "/sse/all", "/ws/all", "/mcp/demo"} {
		method := http.MethodGet
		if strings.HasPrefix(path, "/mcp/") {
			method = http.MethodPost
		}
		req, _ := http.NewRequest(method, base+path, strings.NewReader(`{}`))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		m := challenge.FindStringSubmatch(resp.Header.Get("WWW-Authenticate"))
		if resp.StatusCode != http.StatusUnauthorized || m == nil {
			t.Fatalf("%s %s without a token: got %d, challenge %q; want 401 naming the metadata", method, path, resp.StatusCode, resp.Header.Get("WWW-Authenticate"))
		}
		resp, err = http.Get(m[1])
		if err != nil {
			t.Fatal(err)
		}
		var md struct {
			Resource             string   `json:"resource"`
			AuthorizationServers []string `json:"authorization_servers"`
		}
		err = json.NewDecoder(resp.Body).Decode(&md)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || err != nil || md.Resource != base+path || len(md.AuthorizationServers) != 1 || md.AuthorizationServers[0] != as.srv.URL {
			t.Errorf("%s: the metadata the challenge names (%s): got %d %+v (%v), want 200 naming resource %s and the issuer", path, m[1], resp.StatusCode, md, err, base+path)
		}
	}
}
