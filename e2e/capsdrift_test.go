package e2e

import (
	"encoding/json"
	"log/slog"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/gateway"
	"github.com/sluicehq/sluice/intercept"
	"github.com/sluicehq/sluice/internal/govern"
	"github.com/sluicehq/sluice/inventory"
)

// TestEverythingCapabilityToolsNotDriftTS is the TypeScript SDK client's
// TestEverythingCapabilityToolsNotDrift (gateway): server-everything, a
// stdio upstream behind a drift-blocking inventory, lists get-roots-list,
// trigger-sampling-request and the elicitation tools only to a client
// declaring roots, sampling and elicitation. A client declaring nothing
// pins its list first; a client declaring all three must then see the
// extra tools and call get-roots-list through Sluice (answered by its
// roots handler), not be denied inventory_drift; and the first client must
// still see its own list, nothing taken as removed.
func TestEverythingCapabilityToolsNotDriftTS(t *testing.T) {
	requireNode(t)
	inv, err := inventory.New(inventory.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	ic := &intercept.Interceptor{Decider: &govern.DriftGate{Next: allowAll, Inventory: inv}, Observer: inv}
	wd, _ := os.Getwd()
	g, err := gateway.New(gateway.Options{Upstreams: []gateway.Upstream{
		{Name: "stdio", Command: "node", Args: []string{wd + "/serve.mjs", "stdio"}},
	}}, ic, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(g.Handler())
	t.Cleanup(func() { srv.Close(); g.Close() })

	type out struct {
		OK    bool `json:"ok"`
		Steps struct {
			Tools []string          `json:"tools"`
			Calls []json.RawMessage `json:"calls"`
		} `json:"steps"`
	}
	run := func(caps string, calls ...string) (out, string) {
		t.Helper()
		args := []string{"--transport", "streamable-http", "--url", srv.URL + "/mcp/stdio", "--caps", caps, "--scenario", "calls", "--list-first"}
		for _, c := range calls {
			args = append(args, "--call", c)
		}
		b, _ := json.Marshal(runClient(t, args...))
		var o out
		if err := json.Unmarshal(b, &o); err != nil {
			t.Fatalf("%s: %v", b, err)
		}
		return o, string(b)
	}

	bare, raw := run("none")
	if !bare.OK || !slices.Contains(bare.Steps.Tools, "echo") {
		t.Fatalf("client declaring nothing: got %s, want echo listed", raw)
	}
	capOnly := []string{"get-roots-list", "trigger-sampling-request"}
	for _, name := range capOnly {
		if slices.Contains(bare.Steps.Tools, name) {
			t.Fatalf("client declaring nothing was listed %s: %s (the test's assumption is wrong)", name, raw)
		}
	}

	full, raw := run("all", `get-roots-list={}`)
	for _, name := range capOnly {
		if !slices.Contains(full.Steps.Tools, name) {
			t.Errorf("client declaring roots, sampling and elicitation: %s not listed: %s", name, raw)
		}
	}
	if len(full.Steps.Calls) != 1 || strings.Contains(raw, "inventory_drift") || !strings.Contains(string(full.Steps.Calls[0]), "file:///sluice-e2e-root") ||
		!strings.Contains(string(full.Steps.Calls[0]), `"ok":true`) || strings.Contains(string(full.Steps.Calls[0]), `"isError":true`) {
		t.Errorf("get-roots-list through Sluice: got %s, want its answer naming the client's root, not a drift denial", raw)
	}

	again, raw2 := run("none")
	if !slices.Equal(again.Steps.Tools, bare.Steps.Tools) || strings.Contains(raw2, "inventory_drift") {
		t.Errorf("client declaring nothing, again: got %v, want its first list %v (%s)", again.Steps.Tools, bare.Steps.Tools, raw2)
	}
}
