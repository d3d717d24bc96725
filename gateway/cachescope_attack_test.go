package gateway

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/go-json-experiment/json"

	"github.com/sluicehq/sluice/intercept"
)

// publicHints is an upstream's 2026-07-28 result with SEP-2549's hints
// saying any cache may keep it for ten minutes and serve it to anyone
// ("public": the go-sdk's default).
const publicHints = `"ttlMs":600000,"cacheScope":"public","resultType":"complete"`

// TestAttackPublicCacheScopePassedOn (found by review91): an upstream
// marks its 2026-07-28 lists and resource reads cacheScope "public" (the
// go-sdk does by default): the same for every caller, which any client or
// intermediary may cache and serve across authorization contexts. Through
// the gateway they are not: policy decides each resources/read for its
// agent, and the lists are screened for it. The gateway passed the hint on,
// so a shared cache in front of it (a multi-tenant host, a caching proxy)
// could serve one agent's allowed read to another whom policy denies, for
// as long as the TTL, without the call reaching the gateway. What the
// gateway passes on is marked "private"; its TTL stands.
func TestAttackPublicCacheScopePassedOn(t *testing.T) {
	answer := func(m *intercept.Message) string {
		switch m.Method {
		case "resources/read":
			return `{"jsonrpc":"2.0","id":` + string(m.ID) + `,"result":{"contents":[{"uri":"file:///payroll","text":"salaries"}],` + publicHints + `}}`
		case "tools/list":
			return `{"jsonrpc":"2.0","id":` + string(m.ID) + `,"result":{"tools":[{"name":"echo","inputSchema":{"type":"object"}}],` + publicHints + `}}`
		}
		return `{"jsonrpc":"2.0","id":` + string(m.ID) + `,"result":{}}`
	}
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		m, err := intercept.DecodeMessage(b)
		if err != nil || m.Kind != intercept.KindRequest {
			w.WriteHeader(http.StatusAccepted)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, answer(m))
	}))
	t.Cleanup(up.Close)
	dec := &intercept.StaticDecider{Allow: []string{"echo", intercept.ResourcePrefix + "file:///payroll"}, Mode: intercept.ModeToolResult}
	g, err := New(Options{Upstreams: []Upstream{{Name: "u", URL: up.URL}}}, &intercept.Interceptor{Decider: dec}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	gw := httptest.NewServer(g.Handler())
	t.Cleanup(func() { closeServed(t, gw, g) })

	bridged := &scriptUpstream{handle: func(msg []byte) [][]byte {
		m, err := intercept.DecodeMessage(msg)
		if err != nil || m.Kind != intercept.KindRequest {
			return nil
		}
		return [][]byte{[]byte(answer(m))}
	}}
	_, stdio := startScriptedGateway(t, bridged, Options{})

	read := `{"jsonrpc":"2.0","id":3,"method":"resources/read","params":{"uri":"file:///payroll","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28",` +
		`"io.modelcontextprotocol/clientInfo":{"name":"test","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}}}}`
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second) // a failure bound, not a speed goal
	defer cancel()
	for _, tc := range []struct {
		name, url string
		hdr       map[string]string
		body      string
	}{
		{"tools/list, HTTP upstream", gw.URL + "/mcp/u", modernHeaders("tools/list", ""), modernRequest("tools/list", "")},
		{"resources/read, HTTP upstream", gw.URL + "/mcp/u", modernHeaders("resources/read", "file:///payroll"), read},
		{"tools/list, bridged upstream", stdio + "/mcp/u", modernHeaders("tools/list", ""), modernRequest("tools/list", "")},
	} {
		resp, err := sendPost(ctx, tc.url, tc.hdr, tc.body)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		var got struct {
			Result struct {
				TTL   *int   `json:"ttlMs"`
				Scope string `json:"cacheScope"`
			} `json:"result"`
		}
		if err := json.Unmarshal(b, &got, json.RejectUnknownMembers(false)); err != nil {
			t.Fatalf("%s: %v: %s", tc.name, err, b)
		}
		if got.Result.Scope != "private" || got.Result.TTL == nil || *got.Result.TTL != 600000 {
			t.Errorf("%s: %s; want cacheScope private and the upstream's ttlMs", tc.name, strings.TrimSpace(string(b)))
		}
	}
}
