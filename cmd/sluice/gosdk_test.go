package main

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// bearer is an http.RoundTripper that sends token as the bearer token of
// every request, as an MCP client's HTTP client configured with a token
// from its IdP does.
type bearer struct {
	token string
	next  http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.next.RoundTrip(r)
}

// The official Go SDK's client (github.com/modelcontextprotocol/go-sdk)
// through `sluice serve` with auth: jwt, on Streamable HTTP and SSE, its
// HTTP client sending a token of the test IdP: it initializes, lists the
// tools, and the principal-based rule decides its calls by the token's
// subject, whatever name the client gives itself.
func TestGoSDKClientJWT(t *testing.T) {
	as := newTestAS(t, nil)
	base, leaked := jwtServe(t, as)
	aud := []string{base + "/mcp/demo", base + "/sse/demo", base + "/ws/demo"}
	tokens := map[string]string{
		"go-agent":     as.sign(map[string]any{"sub": "go-agent", "aud": aud}),
		"denied-agent": as.sign(map[string]any{"sub": "denied-agent", "aud": aud}),
	}
	transports := map[string]func(hc *http.Client) mcp.Transport{
		"streamable": func(hc *http.Client) mcp.Transport {
			return &mcp.StreamableClientTransport{Endpoint: base + "/mcp/demo", HTTPClient: hc}
		},
		"sse": func(hc *http.Client) mcp.Transport {
			return &mcp.SSEClientTransport{Endpoint: base + "/sse/demo", HTTPClient: hc}
		},
	}
	for name, transport := range transports {
		t.Run(name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
			defer cancel()
			// search opens a session as the principal sub (the client
			// calls itself the other one) and returns the web_search
			// result's text.
			search := func(sub, claimed string) string {
				hc := &http.Client{Transport: bearer{tokens[sub], http.DefaultTransport}}
				c := mcp.NewClient(&mcp.Implementation{Name: claimed, Version: "1"}, nil)
				cs, err := c.Connect(ctx, transport(hc), nil)
				if err != nil {
					t.Fatalf("%s: initialize: %v", sub, err)
				}
				defer cs.Close()
				if got := cs.InitializeResult(); got == nil || got.ServerInfo == nil {
					t.Fatalf("%s: initialize result: got %+v, want server info", sub, got)
				}
				tools, err := cs.ListTools(ctx, &mcp.ListToolsParams{})
				if err != nil {
					t.Fatalf("%s: tools/list: %v", sub, err)
				}
				// hide_denied_tools: the principal-only deny rule hides
				// web_search from denied-agent (a call is still decided).
				listed := slices.ContainsFunc(tools.Tools, func(tl *mcp.Tool) bool { return tl.Name == "web_search" })
				if listed != (sub != "denied-agent") {
					t.Fatalf("%s: tools/list: web_search listed %v among %d tools", sub, listed, len(tools.Tools))
				}
				res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "web_search", Arguments: map[string]any{"query": "acme salaries"}})
				if err != nil {
					return err.Error()
				}
				var b strings.Builder
				for _, c := range res.Content {
					if tc, ok := c.(*mcp.TextContent); ok {
						b.WriteString(tc.Text)
					}
				}
				return b.String()
			}
			if got := search("go-agent", "denied-agent"); strings.Contains(got, "may not search") || !strings.Contains(got, "Top results") {
				t.Errorf("go-agent calling itself denied-agent: got %q, want the search result", got)
			}
			if got := search("denied-agent", "go-agent"); !strings.Contains(got, "denied-agent may not search") {
				t.Errorf("denied-agent calling itself go-agent: got %q, want the deny of not-for-denied-agent", got)
			}
		})
	}
	if n := leaked.Load(); n != 0 {
		t.Errorf("%d upstream requests carried an Authorization header, want none", n)
	}
}
