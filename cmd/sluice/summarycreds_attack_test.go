package main

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/a2a"
	"github.com/sluicehq/sluice/gateway"
)

// TestAttackStartupLogCredentials: every call's target leaves out the
// credentials an upstream's URL carries (userinfo, query string) and
// scrubs a stdio command line, and errors name an upstream by scheme and
// host; but serve's start-up lines logged each route's and A2A agent's
// target as configured, password, ?key= and --api-key VALUE whole, at
// INFO, into whatever collects the gateway's log.
func TestAttackStartupLogCredentials(t *testing.T) {
	secrets := []string{"UPW-9f8e7d6c5b", "QKEY-1a2b3c4d5e6f", "sk_acme_Zx8pQ2mN7vR4", "A2APW-77aa88bb"}
	cfg := &config{Agents: []a2a.Agent{{Name: "research", URL: "https://svc:A2APW-77aa88bb@research.example.com"}}}
	ups := []gateway.Upstream{
		{Name: "crm", URL: "https://svc:UPW-9f8e7d6c5b@crm.example.com/mcp?key=QKEY-1a2b3c4d5e6f"},
		{Name: "acme", Command: "npx", Args: []string{"-y", "@acme/mcp-server", "--api-key", "sk_acme_Zx8pQ2mN7vR4"}},
	}
	var logged bytes.Buffer
	logSummary(slog.New(slog.NewJSONHandler(&logged, nil)), cfg, &checked{}, ups, bound{Listen: "127.0.0.1:8080"}, false)
	if !strings.Contains(logged.String(), "crm.example.com") || !strings.Contains(logged.String(), "@acme/mcp-server") || !strings.Contains(logged.String(), "research.example.com") {
		t.Fatalf("the routes are not logged:\n%s", &logged)
	}
	for _, s := range secrets {
		if strings.Contains(logged.String(), s) {
			t.Errorf("the start-up log holds the credential %s:\n%s", s, &logged)
		}
	}
}
