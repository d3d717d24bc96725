package main

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	mcptransport "github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
)

// testCA issues certificates for a test.
type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pem  []byte
}

func newTestCA(t *testing.T, name string) *testCA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	return &testCA{cert: cert, key: key, pem: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}
}

// issue returns a leaf certificate signed by ca: a server certificate for
// 127.0.0.1 when server, else a client certificate with cn and uris.
func (ca *testCA) issue(t *testing.T, server bool, cn string, uris ...string) tls.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	serial, _ := rand.Int(rand.Reader, big.NewInt(1<<62))
	tmpl := &x509.Certificate{SerialNumber: serial, Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), KeyUsage: x509.KeyUsageDigitalSignature}
	if server {
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
		tmpl.IPAddresses = []net.IP{net.IPv4(127, 0, 0, 1)}
	} else {
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
	}
	for _, u := range uris {
		pu, err := url.Parse(u)
		if err != nil {
			t.Fatal(err)
		}
		tmpl.URIs = append(tmpl.URIs, pu)
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

func writePEM(t *testing.T, dir string, c tls.Certificate) (certFile, keyFile string) {
	t.Helper()
	kb, err := x509.MarshalPKCS8PrivateKey(c.PrivateKey)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.Certificate[0]}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kb}), 0o600); err != nil {
		t.Fatal(err)
	}
	return certFile, keyFile
}

// Client certificates verified against client_ca_file name the agent: the
// SPIFFE ID in a URI SAN, else the common name, as the README says; a
// certificate another CA signed, or none, gets no further than the TLS
// handshake and the upstream sees nothing.
func TestMTLSPrincipal(t *testing.T) {
	ca := newTestCA(t, "sluice test CA")
	dir := t.TempDir()
	certFile, keyFile := writePEM(t, dir, ca.issue(t, true, "sluice"))
	caFile := filepath.Join(dir, "ca.pem")
	if err := os.WriteFile(caFile, ca.pem, 0o600); err != nil {
		t.Fatal(err)
	}
	const spiffe = "spiffe://example.org/agent/reporter"
	var upstreamHits refusedCounter
	r := startServeWith(t, fmt.Sprintf(`policy:
  default: allow
  result_mode: tool_result
  rules:
    - id: reporter-only
      match: {match_tool: web_search}
      when: principal.method != "mtls" || principal.id != %q
      decision: deny
      reason: only the reporter searches
    - id: cn-agent-no-email
      match: {match_tool: send_email}
      when: principal.id == "cn-agent" && principal.claims.subject == "CN=cn-agent"
      decision: deny
      reason: cn-agent may not email
auth: {mode: mtls}
tls: {cert_file: %s, key_file: %s, client_ca_file: %s}
`, spiffe, certFile, keyFile, caFile), upstreamHits.wrap)
	roots := x509.NewCertPool()
	roots.AddCert(ca.cert)
	// clientFor presents cert whatever CAs the server asks for (Go's
	// client would otherwise send no certificate the server cannot
	// verify, and the rogue case would test nothing).
	clientFor := func(cert tls.Certificate) *http.Client {
		return &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots,
			GetClientCertificate: func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return &cert, nil }}}}
	}
	session := func(t *testing.T, hc *http.Client, name string) *client.Client {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		t.Cleanup(cancel)
		c, err := client.NewStreamableHttpClient(r.url, mcptransport.WithHTTPBasicClient(hc))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		if _, err := c.Initialize(ctx, mcp.InitializeRequest{Params: mcp.InitializeParams{ProtocolVersion: mcp.ProtocolVersion20250618,
			ClientInfo: mcp.Implementation{Name: name, Version: "1"}}}); err != nil {
			t.Fatalf("initialize: %v", err)
		}
		return c
	}
	call := func(t *testing.T, c *client.Client, tool, args string) string {
		res, err := c.CallTool(context.Background(), mcp.CallToolRequest{Params: mcp.CallToolParams{Name: tool, Arguments: jsonArgs(t, args)}})
		if err != nil {
			t.Fatalf("%s: %v", tool, err)
		}
		return text(res)
	}

	t.Run("SPIFFE URI SAN", func(t *testing.T) {
		c := session(t, clientFor(ca.issue(t, false, "reporter-cn", spiffe)), "reporter-cn")
		if got := call(t, c, "web_search", search); !strings.Contains(got, "Top results") {
			t.Errorf("web_search: got %q, want results (the principal is %s)", got, spiffe)
		}
	})
	t.Run("CN only", func(t *testing.T) {
		c := session(t, clientFor(ca.issue(t, false, "cn-agent")), spiffe) // claims the reporter's name: no use
		if got := call(t, c, "web_search", search); !strings.Contains(got, "only the reporter searches") {
			t.Errorf("web_search: got %q, want the deny", got)
		}
		if got := call(t, c, "send_email", `{"to":"a@example.com","subject":"s","body":"b"}`); !strings.Contains(got, "cn-agent may not email") {
			t.Errorf("send_email: got %q, want the deny for principal cn-agent", got)
		}
	})
	for name, hc := range map[string]*http.Client{
		"signed by another CA": clientFor(newTestCA(t, "rogue CA").issue(t, false, "reporter-cn", spiffe)),
		"no certificate":       clientFor(tls.Certificate{}),
	} {
		t.Run(name, func(t *testing.T) {
			resp, err := hc.Post(r.url, "application/json", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"`+refusedName+`","version":"1"}}}`))
			if err == nil {
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				t.Fatalf("got %s %s, want the TLS handshake refused", resp.Status, b)
			}
			if !strings.Contains(err.Error(), "tls: ") {
				t.Errorf("got %v, want a TLS alert", err)
			}
		})
	}
	// A common name the CA signed as the CSR asked, spelled like
	// another agent (Cyrillic а, a zero-width space): refused, as a JWT
	// agent claim would be, not a look-alike agent of its own.
	for _, cn := range []string{"\u0430lice", "cn-agent\u200b"} {
		t.Run("look-alike CN "+strconv.Quote(cn), func(t *testing.T) {
			resp, err := clientFor(ca.issue(t, false, cn)).Post(r.url, "application/json", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"`+refusedName+`","version":"1"}}}`))
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusUnauthorized || !strings.Contains(string(b), "printable ASCII") {
				t.Errorf("got %s %s, want 401 naming printable ASCII", resp.Status, b)
			}
		})
	}
	if n := upstreamHits.n(); n != 0 {
		t.Errorf("the upstream got %d requests from refused clients, want none", n)
	}
}

// refusedCounter counts the initialize requests an upstream receives
// from a client named refusedName: the refused clients' only request. A
// count of every request the upstream got, taken before the refused
// clients ran, also counted what the sessions before them still sent
// (the gateway lists an upstream for a client that had not, and ends
// that session, without the call waiting on it), and failed now and then.
type refusedCounter struct{ v atomic.Int64 }

const refusedName = "x"

func (c *refusedCounter) n() int64 { return c.v.Load() }

func (c *refusedCounter) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		var msg struct {
			Method string `json:"method"`
			Params struct {
				ClientInfo struct {
					Name string `json:"name"`
				} `json:"clientInfo"`
			} `json:"params"`
		}
		if json.Unmarshal(body, &msg) == nil && msg.Method == "initialize" && msg.Params.ClientInfo.Name == refusedName {
			c.v.Add(1)
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		h.ServeHTTP(w, r)
	})
}

func jsonArgs(t *testing.T, s string) map[string]any {
	t.Helper()
	var a map[string]any
	if err := json.Unmarshal([]byte(s), &a); err != nil {
		t.Fatal(err)
	}
	return a
}
