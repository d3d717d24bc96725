package gateway

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/sluicehq/sluice/gateway/credential"
	"github.com/sluicehq/sluice/internal/h1"
)

// upstreamClient is the HTTP client that sends up's requests with the
// credentials of its oauth: section through base, the gateway's own
// transport, or nil (the transport's own client) when it has none. Its
// calls connect to the upstream as every other upstream's do, directly:
// before, they went through Go's default transport, and so through the
// proxy HTTP_PROXY or HTTPS_PROXY named, the access token with them. The
// token endpoint is reached as jwks_url is, by Go's default client (a
// proxy those name included).
func upstreamClient(up Upstream, base http.RoundTripper) (*http.Client, error) {
	if up.OAuth == nil {
		return nil, nil
	}
	if up.Transport != TransportStreamableHTTP && up.Transport != TransportSSE {
		return nil, errors.New("oauth: only streamable-http and sse upstreams take an OAuth token; give a websocket upstream headers, a stdio one env")
	}
	for k := range up.Headers {
		if strings.EqualFold(k, "Authorization") {
			return nil, errors.New("oauth: the upstream's Authorization comes from oauth; remove it from headers")
		}
	}
	if err := up.OAuth.Validate("oauth"); err != nil {
		return nil, err
	}
	// No overall timeout: a response may stream as long as its request
	// runs (as the transports' own clients).
	return h1.NoRedirects(&http.Client{Transport: &credential.Transport{Base: base, Tokens: credential.NewClientCredentials(*up.OAuth, credential.Deps{})}}), nil
}

// ErrUpstreamRefusedCredentials is the cause of the error a call gets
// when its upstream answers 401: the upstream refused Sluice's own
// credentials (upstreams[].headers or oauth), which the agent can do
// nothing about.
var ErrUpstreamRefusedCredentials = errors.New("the upstream refused the gateway's credentials (HTTP 401); the operator must check upstreams[].headers or upstreams[].oauth")

// do sends req to rt's upstream, with the route's own client when its
// oauth: section needs one. A 401 becomes ErrUpstreamRefusedCredentials,
// so that neither the upstream's challenge nor its body reaches the agent
// (whose own credentials never reach the upstream).
func (g *Gateway) do(rt *route, req *http.Request) (*http.Response, error) {
	c := g.client
	if rt.client != nil {
		c = rt.client
	}
	resp, err := h1.Send(c, req)
	if err == nil && resp.StatusCode == http.StatusUnauthorized {
		resp.Body.Close()
		g.log.Warn("upstream refused the gateway's credentials", "upstream", rt.up.Name, "status", resp.StatusCode)
		return nil, ErrUpstreamRefusedCredentials
	}
	if err == nil && h1.IsRedirect(resp.StatusCode) {
		resp.Body.Close()
		g.log.Warn("upstream answered with a redirect, which is not followed", "upstream", rt.up.Name, "status", resp.StatusCode,
			"location", redactLocation(resp.Header.Get("Location")))
		return nil, fmt.Errorf("%w (HTTP %d)", ErrUpstreamRedirect, resp.StatusCode)
	}
	return resp, err
}

// ErrUpstreamRedirect is the cause of the error a call gets when its
// upstream answers with a redirect. The gateway does not follow it (the
// call was decided about for the configured upstream, and would carry the
// operator's headers elsewhere) and does not pass it on either (the
// agent's client would follow it around the gateway); the log names the
// Location for the operator.
var ErrUpstreamRedirect = errors.New("the upstream answered with a redirect, which the gateway does not follow; the operator must set upstreams[].url to where it redirects")

// redactLocation is a redirect's Location as logged: without user
// information or query, which may hold credentials.
func redactLocation(loc string) string {
	u, err := url.Parse(loc)
	if err != nil {
		return "(unparsable)"
	}
	u.User, u.RawQuery, u.Fragment = nil, "", ""
	return u.String()
}
