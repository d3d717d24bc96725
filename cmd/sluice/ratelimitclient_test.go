package main

import (
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"testing"
)

// clientFrom is an HTTP client whose connections come from ip, so that
// one machine can be two clients (127.0.0.1, 127.0.0.2).
func clientFrom(ip string) *http.Client {
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}}
	return &http.Client{Transport: &http.Transport{DialContext: d.DialContext}}
}

// TestRateLimitByClientAddress: without auth a 2026-07-28 client names
// itself afresh at each call, and each name is a principal with a full
// bucket, so by: [principal] never held it (the README said so, and
// offered only a global limit, which the flood spends for everyone). A
// rule by: [client] keys the caller's address, which it cannot change
// per call: the renaming client is limited (another address is not:
// TestTrustedProxyClients; every loopback address is one client,
// TestAttackRateLimitLoopbackAddresses).
func TestRateLimitByClientAddress(t *testing.T) {
	g := startServe(t, `policy: {default: allow, result_mode: tool_result}
rate_limits:
  rules: [{id: per-address, by: [client], rate: 3/h}]
`)
	echo := `{"name":"echo","arguments":{"message":"hi"}}`
	mallory := clientFrom("127.0.0.1")
	served := 0
	for i := range 10 {
		got := modernCallFrom(t, mallory, g.url, fmt.Sprintf("mallory-%d", i), "tools/call", "echo", echo)
		switch {
		case strings.Contains(got, "Echo: hi"):
			served++
		case !strings.Contains(got, "rate_limited"):
			t.Fatalf("call %d: got %s, want it served or rate_limited", i, got)
		}
	}
	if served != 3 {
		t.Errorf("calls of a client renaming itself at each call, under 3/h by client: got %d served, want 3", served)
	}
}

// forwardingFor is a client from ip that writes xff(i) into the
// X-Forwarded-For of its i-th request, as a client may.
func forwardingFor(ip string, xff func(i int) string) *http.Client {
	c := clientFrom(ip)
	next, n := c.Transport, 0
	c.Transport = roundTripFunc(func(r *http.Request) (*http.Response, error) {
		n++
		r = r.Clone(r.Context())
		r.Header.Set("X-Forwarded-For", xff(n))
		return next.RoundTrip(r)
	})
	return c
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// TestTrustedProxyClients: behind a reverse proxy (here httputil's, which
// appends the address it was reached from to X-Forwarded-For), every
// client came from the proxy's address, so a rule by: [client] was one
// bucket for all of them: one agent spent it and the others were refused.
// With the proxy in trusted_proxies each client is its own. Attacks: a
// client behind the proxy that writes a fresh X-Forwarded-For of its own
// at every call is still one client (the proxy's append comes after), and
// a client reaching Sluice directly is not believed at all.
func TestTrustedProxyClients(t *testing.T) {
	g := startServe(t, `policy: {default: allow, result_mode: tool_result}
trusted_proxies: [127.0.0.1]
rate_limits:
  rules: [{id: per-address, by: [client], rate: 3/h}]
`)
	target, err := url.Parse(g.url)
	if err != nil {
		t.Fatal(err)
	}
	// A proxy reached over a network: it appends the address it was
	// reached from, which here, every client being on this host, is a
	// loopback one, and every loopback address is one client. So the
	// proxy names 127.0.0.N as 192.0.2.N, a host of its network.
	proxy := httptest.NewServer(&httputil.ReverseProxy{Rewrite: func(pr *httputil.ProxyRequest) {
		pr.SetURL(&url.URL{Scheme: target.Scheme, Host: target.Host})
		host, _, _ := net.SplitHostPort(pr.In.RemoteAddr)
		peer := "192.0.2." + host[strings.LastIndexByte(host, '.')+1:]
		pr.Out.Header["X-Forwarded-For"] = append(pr.In.Header.Values("X-Forwarded-For"), peer)
	}})
	defer proxy.Close()
	viaProxy := proxy.URL + target.Path

	echo := `{"name":"echo","arguments":{"message":"hi"}}`
	served := func(c *http.Client, url, who string) int {
		t.Helper()
		n := 0
		for i := range 6 {
			got := modernCallFrom(t, c, url, fmt.Sprintf("%s-%d", who, i), "tools/call", "echo", echo)
			switch {
			case strings.Contains(got, "Echo: hi"):
				n++
			case !strings.Contains(got, "rate_limited"):
				t.Fatalf("%s's call %d: got %s, want it served or rate_limited", who, i, got)
			}
		}
		return n
	}
	spoofing := func(i int) string { return fmt.Sprintf("198.51.100.%d", i) }
	if n := served(forwardingFor("127.0.0.2", spoofing), viaProxy, "mallory"); n != 3 {
		t.Errorf("a client behind the proxy writing its own X-Forwarded-For: %d calls served, want 3", n)
	}
	if n := served(clientFrom("127.0.0.3"), viaProxy, "alice"); n != 3 {
		t.Errorf("another client behind the same proxy: %d calls served, want 3 (its own bucket)", n)
	}
	if n := served(forwardingFor("127.0.0.4", spoofing), g.url, "direct"); n != 3 {
		t.Errorf("a client reaching Sluice directly, writing X-Forwarded-For: %d calls served, want 3", n)
	}
}
