package approval

import (
	"github.com/sluicehq/sluice/internal/costratio"
	"strings"
	"testing"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/sluicehq/sluice/intercept"
)

// TestAttackDeepCallHash: the hash an approval binds a call to is taken
// over its arguments in canonical form, and putting objects' members in
// order moved all inside each object again at every level: arguments of
// objects 5,000 deep around 1 MiB cost hundreds of times flat ones as
// long. Past jcs.MaxDepth the call is bound to its exact bytes instead.
func TestAttackDeepCallHash(t *testing.T) {
	const n, depth = 1 << 20, 5000
	deep := strings.Repeat(`{"b":1,"a":`, depth) + `"` + strings.Repeat("x", n) + `"` + strings.Repeat("}", depth)
	flat := `{"b":1,"a":"` + strings.Repeat("x", len(deep)-14) + `"}`
	hash := func(args string) func() {
		d := &intercept.ActionDescriptor{Upstream: "u", ToolName: "t", Parameters: jsontext.Value(args)}
		return func() { CallHash(d, "v1") }
	}
	ratio, dt, ft := costratio.Of(hash(deep), hash(flat))
	t.Logf("%d deep: %v; flat: %v; ratio %.1f", depth, dt, ft, ratio)
	if ratio > 20 {
		t.Errorf("hashing a call whose arguments nest %d deep took %v, %.0f times the %v of flat ones as long", depth, dt, ratio, ft)
	}
	// Still bound: other bytes, another hash; the same arguments in
	// another order, the same hash where they are not too deep.
	other := strings.Replace(deep, `"b":1`, `"b":2`, 1)
	if CallHash(&intercept.ActionDescriptor{Upstream: "u", ToolName: "t", Parameters: jsontext.Value(deep)}, "v1") ==
		CallHash(&intercept.ActionDescriptor{Upstream: "u", ToolName: "t", Parameters: jsontext.Value(other)}, "v1") {
		t.Error("two deep calls with other arguments hash alike")
	}
	if CallHash(&intercept.ActionDescriptor{Upstream: "u", ToolName: "t", Parameters: jsontext.Value(`{"a":{"x":1,"y":2},"b":1}`)}, "v1") !=
		CallHash(&intercept.ActionDescriptor{Upstream: "u", ToolName: "t", Parameters: jsontext.Value(`{"b":1,"a":{"y":2,"x":1}}`)}, "v1") {
		t.Error("the same arguments in another order hash differently")
	}
}
