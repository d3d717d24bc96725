package telemetry

import (
	"strings"
	"testing"

	"github.com/sluicehq/sluice/internal/costratio"
)

// TestAttackDeepArgumentsHash: the hash of a call's arguments is written
// in canonical form object by object, each object's members in a buffer
// of their own copied into the object above: every level copies all
// that is below it again. Objects nested 5,000 deep around a 1 MiB
// string (one agent's tools/call, under the 4 MiB body limit) cost 2 s,
// 85 times flat arguments as long. The hash must cost a bounded multiple
// of the arguments' size, and be the one the decoding path gives.
func TestAttackDeepArgumentsHash(t *testing.T) {
	const n, depth = 256 << 10, 2000
	deep := strings.Repeat(`{"a":`, depth) + `"` + strings.Repeat("x", n) + `"` + strings.Repeat("}", depth)
	flat := `{"a":"` + strings.Repeat("x", len(deep)-8) + `"}`
	hash := func(raw string) func() { return func() { Redactor{}.Arguments([]byte(raw)) } }
	ratio, d, f := costratio.Of(hash(deep), hash(flat))
	t.Logf("%d deep: %v; flat: %v; ratio %.1f", depth, d, f, ratio)
	if ratio > 20 {
		t.Errorf("hashing arguments %d objects deep took %v, %.0f times the %v of flat ones as long (want a bounded multiple of their size)", depth, d, ratio, f)
	}
	if got, want := (Redactor{}).Arguments([]byte(deep)).SHA256, (Redactor{KeepArguments: true}).Arguments([]byte(deep)).SHA256; got != want {
		t.Errorf("deep arguments: hash %s, want the decoding path's %s", got, want)
	}
}
