package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	mcptransport "github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
)

// TestTokenForAnotherRoute: each route and virtual server is a protected
// resource of its own (RFC 9728 metadata at
// /.well-known/oauth-protected-resource/mcp/{name} names
// resource …/mcp/{name}), and an MCP client asks the authorization
// server for a token for exactly that resource (RFC 8707; the
// TypeScript SDK does, TestTypeScriptSDKOAuth). With the routes' URLs as
// the audiences, a token issued for /mcp/demo was taken on the virtual
// server /mcp/all and the other way round: a token one MCP server was
// given could be spent at another (the MCP authorization spec's "tokens
// issued for other resources MUST be rejected"). A token counts only on
// the route its audience names (any of its transports), or everywhere
// when the audience names no route.
func TestTokenForAnotherRoute(t *testing.T) {
	as := newTestAS(t, map[string]string{"agent-a": "s3cret"})
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
  jwt:
    issuer: %s
    audience: [%s/mcp/demo, %s/mcp/all, sluice-gateway]
    jwks_url: %s/jwks
`, as.srv.URL, base, base, as.srv.URL), nil)

	// tokenFor asks the authorization server for a token for resource,
	// as an MCP client's client-credentials flow does.
	tokenFor := func(resource string) string {
		req, _ := http.NewRequest(http.MethodPost, as.srv.URL+"/token", strings.NewReader(url.Values{"grant_type": {"client_credentials"}, "resource": {resource}}.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.SetBasicAuth("agent-a", "s3cret")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var tok struct {
			AccessToken string `json:"access_token"`
		}
		if err := json.NewDecoder(resp.Body).Decode(&tok); err != nil || tok.AccessToken == "" {
			t.Fatalf("token for %s: %v", resource, err)
		}
		return tok.AccessToken
	}
	initialize := func(url, token string) error {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		c, err := client.NewStreamableHttpClient(url, mcptransport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer " + token}))
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		_, err = c.Initialize(ctx, mcp.InitializeRequest{Params: mcp.InitializeParams{ProtocolVersion: mcp.ProtocolVersion20250618,
			ClientInfo: mcp.Implementation{Name: "agent-a", Version: "1"}}})
		return err
	}
	demoTok, allTok := tokenFor(base+"/mcp/demo"), tokenFor(base+"/mcp/all")
	gatewayTok := as.sign(map[string]any{"sub": "agent-a", "aud": "sluice-gateway"})
	for _, tc := range []struct {
		name, url, token string
		ok               bool
	}{
		{"demo token on demo", base + "/mcp/demo", demoTok, true},
		{"all token on all", base + "/mcp/all", allTok, true},
		{"gateway token on demo", base + "/mcp/demo", gatewayTok, true},
		{"gateway token on all", base + "/mcp/all", gatewayTok, true},
		{"demo token on all", base + "/mcp/all", demoTok, false},
		{"all token on demo", base + "/mcp/demo", allTok, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := initialize(tc.url, tc.token)
			if tc.ok && err != nil {
				t.Errorf("initialize: %v, want a session", err)
			}
			if !tc.ok && err == nil {
				t.Errorf("initialize succeeded with a token issued for another resource, want 401")
			}
		})
	}
	// The same route on its other transports takes the route's token; a
	// 2026-07-28 request is refused as a session is.
	if got := modernCallWithKey(t, base+"/mcp/all", demoTok, "agent-a", "echo", `{"message":"x"}`); !strings.HasPrefix(got, "401 ") || !strings.Contains(got, "another") {
		t.Errorf("2026-07-28 on /mcp/all with the demo token: got %s, want 401", got)
	}
	req, _ := http.NewRequest(http.MethodGet, base+"/sse/demo", nil)
	req.Header.Set("Authorization", "Bearer "+demoTok)
	req.Header.Set("Accept", "text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("GET /sse/demo with the demo token: got %s, want 200", resp.Status)
	}
}
