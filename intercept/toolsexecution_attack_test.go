package intercept

import (
	"strings"
	"testing"

	"github.com/go-json-experiment/json/jsontext"
)

// TestAttackToolFieldCaseVariants: every member of a tool the inventory
// pins, spelt in another case, is refused: the inventory reads names as
// spelt, a client with Go's encoding/json in any case. "Execution" (a
// task's support: forbidden, optional, required) was passed on unpinned,
// so a pinned tool's could change unnoticed.
func TestAttackToolFieldCaseVariants(t *testing.T) {
	for _, m := range []string{"Execution", "Title", "Description", "InputSchema", "OutputSchema", "Annotations", "Icons", "_Meta"} {
		err := CheckToolsResult(jsontext.Value(`{"tools":[{"name":"chart","` + m + `":{"taskSupport":"required"}}]}`))
		if err == nil || !strings.Contains(err.Error(), "only in case") {
			t.Errorf("a tool with member %q: %v, want it refused", m, err)
		}
	}
	if err := CheckToolsResult(jsontext.Value(`{"tools":[{"name":"chart","execution":{"taskSupport":"required"}}]}`)); err != nil {
		t.Errorf("a tool with execution: %v", err)
	}
}
