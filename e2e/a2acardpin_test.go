package e2e

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/a2a"
	"github.com/sluicehq/sluice/gateway"
	"github.com/sluicehq/sluice/intercept"
	"github.com/sluicehq/sluice/internal/govern"
	"github.com/sluicehq/sluice/inventory"
)

// TestA2ACardSecurityPinnedAcrossVersions: the gateway pins what an
// agent's card says of its provider, extensions, security schemes (where
// clients send credentials) and requirements, read alike from the 0.3
// card and the 1.0 card. @a2a-js/sdk's agent serves the 0.3 card in 0.3's
// OpenAPI shape and the 1.0 card as ts-proto's in-memory object
// ({"scheme": {"$case": …}}); read in turns, neither is drift from the
// other, so the SDK's client goes on sending in both versions, and both
// cards served carry the agent's token URL.
func TestA2ACardSecurityPinnedAcrossVersions(t *testing.T) {
	requireNode(t)
	agent := startAgent(t, "CARD_SECURITY=1")
	inv, err := inventory.New(inventory.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	ic := &intercept.Interceptor{Decider: &govern.DriftGate{Next: allowAll, Inventory: inv}, Observer: inv}
	ag, err := a2a.New(a2a.Options{Agents: []a2a.Agent{{Name: "echo", URL: agent}}, CardTTL: time.Nanosecond}, ic)
	if err != nil {
		t.Fatal(err)
	}
	g, err := gateway.New(gateway.Options{Mount: map[string]http.Handler{"/a2a/": ag.Handler()}}, ic, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(principals(g.Handler()))
	t.Cleanup(func() { srv.Close(); g.Close() })
	for range 2 {
		for _, v := range []string{"0.3", "1.0"} {
			req, _ := http.NewRequest(http.MethodGet, srv.URL+"/a2a/echo/.well-known/agent-card.json", nil)
			if v == "1.0" {
				req.Header.Set("A2A-Version", "1.0")
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if !strings.Contains(string(b), "https://acme.example/token") || !strings.Contains(string(b), "Traces calls.") {
				t.Fatalf("%s card: want the agent's schemes and extension, got %s", v, b)
			}
		}
	}
	for _, v := range []string{"1.0", "0.3"} {
		out := a2aClient(t, "--url", srv.URL+"/a2a/echo/", "--version", v)
		if strings.Contains(out, "blocked") || !strings.Contains(out, "echo: hello stream") {
			t.Errorf("A2A %s through Sluice after reading both cards: %s", v, out)
		}
	}
}
