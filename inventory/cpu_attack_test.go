package inventory

import (
	"strings"
	"testing"
	"time"

	"github.com/go-json-experiment/json/jsontext"
)

// leastOf3 is the least time f takes in three runs: compared as a ratio
// with another input's, so that a loaded machine (or -race) slows both
// sides alike.
func leastOf3(f func()) time.Duration {
	least := time.Duration(1<<63 - 1)
	for range 3 {
		start := time.Now()
		f()
		least = min(least, time.Since(start))
	}
	return least
}

// TestAttackDeepDrift: the drift of a pinned tool is diffed down to the
// changed leaves, each level decoding again all that is below it. An
// upstream that pinned a schema nested a thousand deep and then changes
// its innermost leaf had the inventory decode its list a thousand times
// over on the answer's path (holding the inventory's lock, which every
// call's Blocked waits on): a 2 MiB schema 5,000 deep took minutes. The
// diff must cost a bounded multiple of the values' size.
func TestAttackDeepDrift(t *testing.T) {
	const n, depth = 128 << 10, 1000
	// The flat one is an array as long, its brackets turned to spaces.
	tool := func(open, close, leaf string) Tool {
		return Tool{Name: "t", InputSchema: jsontext.Value("[" + strings.Repeat(open, depth-1) +
			`"` + strings.Repeat("x", n-2*depth) + `","` + leaf + `"` + strings.Repeat(close, depth-1) + "]")}
	}
	deep := leastOf3(func() { diffTool(tool("[", "]", "a"), tool("[", "]", "b")) })
	flat := leastOf3(func() { diffTool(tool(" ", " ", "a"), tool(" ", " ", "b")) })
	ratio := float64(deep) / float64(flat)
	t.Logf("%d deep: %v; flat: %v; ratio %.1f", depth, deep, flat, ratio)
	if ratio > 50 {
		t.Errorf("diffing a schema %d deep took %v, %.0f times the %v of one as long and flat (want a bounded multiple of its size)", depth, deep, ratio, flat)
	}

	// What the diff is for still holds: an ordinary schema is diffed to
	// its leaves, and a deep one is still reported changed.
	p := Tool{Name: "t", InputSchema: jsontext.Value(`{"properties":{"a":{"type":"string"},"b":{"items":{"enum":["x","y"]}}},"type":"object"}`)}
	o := Tool{Name: "t", InputSchema: jsontext.Value(`{"properties":{"a":{"type":"number"},"b":{"items":{"enum":["x","z"]}}},"type":"object"}`)}
	fs := diffTool(p, o)
	if len(fs) != 1 || len(fs[0].Values) != 2 || fs[0].Values[0].Path != "/properties/a/type" || fs[0].Values[1].Path != "/properties/b/items/enum/1" {
		t.Errorf("ordinary schema: got %+v, want /properties/a/type and /properties/b/items/enum/1", fs)
	}
	if fs := diffTool(tool("[", "]", "a"), tool("[", "]", "b")); len(fs) != 1 || len(fs[0].Values) == 0 {
		t.Errorf("deep schema: got %+v, want it reported changed", fs)
	}
}
