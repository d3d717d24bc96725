package main

import (
	"bytes"
	"errors"
	"testing"
)

// A name beyond what the verb takes was ignored: `sluice inventory list
// demo` listed every upstream, `sluice inventory pin demo web_search`
// pinned all of demo. Each is a usage error now, before the admin API is
// called (here an address nothing answers on).
func TestInventoryExtraArgument(t *testing.T) {
	admin := []string{"--admin", "http://127.0.0.1:1", "--token", "t"}
	for _, args := range [][]string{
		{"list", "demo"},
		{"diff", "demo", "web_search"},
		{"pin", "demo", "web_search"},
		{"approve", "demo", "web_search", "echo"},
	} {
		var out bytes.Buffer
		err := runInventory(t.Context(), append(args, admin...), &out)
		var ue *usageError
		if !errors.As(err, &ue) {
			t.Errorf("inventory %q: got %v; want a usage error", args, err)
		}
	}
}
