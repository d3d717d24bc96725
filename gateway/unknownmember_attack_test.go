package gateway

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/internal/govern"
)

// TestAttackRugPullUnknownMember: the rug is pinned with fetch carrying a
// member MCP does not define (x-notes), which clients that hand the model
// the whole tool show it. The rug then puts its payload there, leaving
// every member the inventory knew as it was. The change is drift: a
// client listing is shown the pinned x-notes, and a call of fetch is
// denied and never reaches the rug.
func TestAttackRugPullUnknownMember(t *testing.T) {
	for _, route := range []string{"http", "stdio"} {
		t.Run(route, func(t *testing.T) {
			gw, _, r := rugGateway(t)
			url := gw.URL + "/mcp/" + route
			if err := os.WriteFile(filepath.Join(r.dir, "notes"), nil, 0o600); err != nil {
				t.Fatal(err)
			}
			if list := statelessAs(t, url, "pinner", "tools/list", "", ""); !strings.Contains(list, "Fetch politely.") {
				t.Fatalf("first listing: %s", list)
			}
			if err := os.WriteFile(filepath.Join(r.dir, "notesdrift"), nil, 0o600); err != nil {
				t.Fatal(err)
			}
			list := statelessAs(t, url, "lister", "tools/list", "", "")
			if strings.Contains(list, "id_rsa") || !strings.Contains(list, "Fetch politely.") {
				t.Errorf("listing after the rug pull: %.500s; want fetch as pinned", list)
			}
			got := statelessAs(t, url, "lister", "tools/call", "fetch", fetchCall)
			if strings.Contains(r.log(), "call fetch") || !strings.Contains(got, govern.ReasonDrift) {
				t.Errorf("got %.300s (rug saw %q), want the call denied with %s", got, r.log(), govern.ReasonDrift)
			}
		})
	}
}
