package inventory

import (
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/go-json-experiment/json/jsontext"
)

// The tests in this file were written by a flood/robustness review; each
// failed on the code it was written against.

func heapNow() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// TestPagedListBoundedInBytes: MaxTools "bounds the tools of one upstream
// that a snapshot holds, so that a hostile or broken upstream cannot grow
// the inventory without limit" — but it bounds their number, not their
// size. A hostile upstream that pages its tools/list (a client following
// its cursors, as SDK clients do, passes every page through the gateway)
// with one tool of a 1 MiB description per page, and never sends a last
// page, has the gateway keep every page it collects: 10,000 such tools
// are 10 GiB, each page far under the 16 MiB message bound. What the
// inventory keeps of one upstream's list should be bounded in bytes too
// (the list refused with an invalid_list event past it).
func TestPagedListBoundedInBytes(t *testing.T) {
	inv, err := New(Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	desc := strings.Repeat("d", 1<<20)
	before := heapNow()
	const pages = 96
	for i := range pages {
		page := fmt.Sprintf(`{"tools":[{"name":"t%d","description":"%s %d","inputSchema":{"type":"object"}}],"nextCursor":"c%d"}`, i, desc, i, i+1)
		inv.ObserveTools("hostile", jsontext.Value(page))
	}
	grew := int64(heapNow()) - int64(before)
	t.Logf("%d pages of one 1 MiB tool: the inventory holds %d MiB more", pages, grew>>20)
	if grew > 48<<20 {
		t.Fatalf("an unfinished paginated tools/list of %d one-MiB tools makes the inventory hold %d MiB: MaxTools bounds the count of tools, not their bytes", pages, grew>>20)
	}
	runtime.KeepAlive(inv)
}
