package main

import (
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/sluicehq/sluice/inventory"
)

// (Found by an attacker review.) TestAttackInventorySnapshotPerCall: an LLM
// classifier asks for the inventory snapshot at every call, cache hits
// included. It was built afresh each time, a copy of every tool of every
// upstream: an upstream listing 5,000 tools made each call allocate half
// a megabyte. An unchanged inventory is now the same snapshot. And the
// snapshot's hash names each upstream beside its own hash, since the
// prompt names the upstream of each tool.
func TestAttackInventorySnapshotPerCall(t *testing.T) {
	inv, err := inventory.New(inventory.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	var tools []string
	for i := range 5000 {
		tools = append(tools, fmt.Sprintf(`{"name":"tool_%d","description":"Does thing %d.","inputSchema":{"type":"object"}}`, i, i))
	}
	inv.ObserveTools("many", jsontext.Value(`{"tools":[`+strings.Join(tools, ",")+`]}`))
	inv.ObserveTools("finance", jsontext.Value(`{"tools":[{"name":"read_invoice","description":"Reads one invoice.","inputSchema":{"type":"object"}}]}`))
	gv := &governance{inv: inv}

	first := gv.inventorySnapshot()
	if len(first.Tools) != 5001 {
		t.Fatalf("snapshot has %d tools, want 5001", len(first.Tools))
	}
	if !strings.Contains(first.Hash, "finance:") || !strings.Contains(first.Hash, "many:") {
		t.Errorf("hash %q does not name the upstreams", first.Hash)
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range 10 {
		if s := gv.inventorySnapshot(); s.Hash != first.Hash || len(s.Tools) != len(first.Tools) {
			t.Fatalf("snapshot changed: %q, %d tools", s.Hash, len(s.Tools))
		}
	}
	runtime.ReadMemStats(&after)
	if per := (after.TotalAlloc - before.TotalAlloc) / 10; per > 16<<10 {
		t.Errorf("an unchanged inventory's snapshot allocated %d bytes a call", per)
	}
}
