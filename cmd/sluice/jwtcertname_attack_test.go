package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	mcptransport "github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
)

// TestAttackJWTTakesCertificateAgentName: with jwt and mtls both
// configured and agents named by a claim an IdP's users may choose
// (agent_claim: preferred_username), a token whose claim is a
// certificate's agent, its SPIFFE ID, became that agent: here the one
// allowed to search. A certificate's agent is the CA's name; a token
// naming it is refused now (401), unless auth.shared_agent_names says
// the operator means one agent by both (mcp-go client, `sluice serve`
// with TLS on 127.0.0.1:0, the test IdP's tokens).
func TestAttackJWTTakesCertificateAgentName(t *testing.T) {
	const reporter = "spiffe://example.org/agent/reporter"
	as := newTestAS(t, nil)
	ca := newTestCA(t, "sluice test CA")
	dir := t.TempDir()
	certFile, keyFile := writePEM(t, dir, ca.issue(t, true, "sluice"))
	caFile := filepath.Join(dir, "ca.pem")
	if err := os.WriteFile(caFile, ca.pem, 0o600); err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AddCert(ca.cert)
	// search opens an mcp-go session on url with cert (none: the zero
	// value) and token (none: "") and returns web_search's text, or the
	// error that refused it.
	search := func(t *testing.T, url string, cert tls.Certificate, token string) string {
		hc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots,
			GetClientCertificate: func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return &cert, nil }}}}
		var h map[string]string
		if token != "" {
			h = map[string]string{"Authorization": "Bearer " + token}
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		c, err := client.NewStreamableHttpClient(url, mcptransport.WithHTTPBasicClient(hc), mcptransport.WithHTTPHeaders(h))
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if _, err := c.Initialize(ctx, mcp.InitializeRequest{Params: mcp.InitializeParams{ProtocolVersion: mcp.ProtocolVersion20250618,
			ClientInfo: mcp.Implementation{Name: "client", Version: "1"}}}); err != nil {
			return "initialize: " + err.Error()
		}
		res, err := c.CallTool(ctx, mcp.CallToolRequest{Params: mcp.CallToolParams{Name: "web_search", Arguments: jsonArgs(t, search)}})
		if err != nil {
			return err.Error()
		}
		return text(res)
	}
	for _, shared := range []bool{false, true} {
		t.Run(fmt.Sprintf("shared_agent_names %v", shared), func(t *testing.T) {
			agents, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			base := "https://" + agents.Addr().String()
			r := startServeOn(t, agents, fmt.Sprintf(`listen: %s
policy:
  default: allow
  result_mode: tool_result
  rules:
    - {id: reporter-only, match: {match_tool: web_search}, when: 'principal.id != %q', decision: deny, reason: only the reporter searches}
auth:
  mode: [mtls, jwt]
  shared_agent_names: %v
  mtls: {identity: uri}
  jwt: {issuer: %s, audience: [%s/mcp/demo], jwks_url: %s/jwks, agent_claim: preferred_username}
tls: {cert_file: %s, key_file: %s, client_ca_file: %s}
`, agents.Addr(), reporter, shared, as.srv.URL, base, as.srv.URL, certFile, keyFile, caFile), nil)
			if got := search(t, r.url, ca.issue(t, false, "reporter", reporter), ""); !strings.Contains(got, "Top results") {
				t.Fatalf("the reporter's certificate: got %q, want the search results", got)
			}
			token := func(name string) string {
				return as.sign(map[string]any{"sub": "3f1c0a52-user", "preferred_username": name, "aud": []string{base + "/mcp/demo"}})
			}
			if got := search(t, r.url, tls.Certificate{}, token("someone")); !strings.Contains(got, "only the reporter searches") {
				t.Fatalf("an IdP user's token: got %q, want the deny of reporter-only", got)
			}
			got := search(t, r.url, tls.Certificate{}, token(reporter))
			if shared {
				if !strings.Contains(got, "Top results") {
					t.Errorf("shared_agent_names: a token naming the certificate's agent: got %q, want the search results", got)
				}
				return
			}
			if !strings.HasPrefix(got, "initialize: ") || !strings.Contains(got, "authorization required") {
				t.Errorf("a token whose agent claim names the certificate's agent: got %q, want the initialize refused (401)", got)
			}
			// Saying why, to a client that reads the answer.
			req, _ := http.NewRequest(http.MethodPost, r.url, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Authorization", "Bearer "+token(reporter))
			hc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots}}}
			resp, err := hc.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != http.StatusUnauthorized || !strings.Contains(string(b), "certificate's agent") {
				t.Errorf("the refusal: got %d %s, want 401 saying the name is a certificate's", resp.StatusCode, b)
			}
		})
	}
}
