package intercept

import (
	"fmt"
	"strings"
	"testing"

	"github.com/go-json-experiment/json/jsontext"
)

// The tests in this file were written by a flood/robustness review; each
// failed on the code it was written against.

// TestToolCatalogGrowsForever: the interceptor's tool catalog (the
// descriptions, annotations and schemas descriptors are given) merges
// every tools/list page it sees into what it already holds for the
// upstream — "later pages of a paginated list add to the earlier ones" —
// but never starts over: not for a complete single-page list, not for a
// first page. An upstream whose lists name fresh tools each time (a
// hostile one, or one that generates names) grows the catalog with every
// tools/list any client sends, without bound and for the process's
// lifetime, each page copying everything held so far (quadratic work);
// and a tool the upstream no longer lists keeps its old description. A
// complete list should replace the catalog of its upstream.
func TestToolCatalogGrowsForever(t *testing.T) {
	ic := &Interceptor{}
	desc := strings.Repeat("d", 1<<10)
	const lists, per = 300, 100
	for l := range lists {
		var b strings.Builder
		b.WriteString(`{"tools":[`)
		for i := range per {
			if i > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, `{"name":"tool_%d_%d","description":"%s","inputSchema":{"type":"object"}}`, l, i, desc)
		}
		b.WriteString(`]}`)
		ic.ObserveTools("u", jsontext.Value(b.String()))
	}
	v, ok := ic.catalog.Load("u")
	if !ok {
		t.Fatal("no catalog for the upstream")
	}
	if n := len(v.(*toolSet).tools); n > per {
		t.Fatalf("after %d complete single-page tools/list answers of %d tools each, the catalog holds %d tools (~%d MiB of descriptions): it only ever grows",
			lists, per, n, n*len(desc)>>20)
	}
}

// The pages of one paginated list add up; the next list starts over.
func TestToolCatalogPagesMerge(t *testing.T) {
	ic := &Interceptor{}
	has := func(name string) bool {
		v, _ := ic.catalog.Load("u")
		_, ok := v.(*toolSet).tools[name]
		return ok
	}
	ic.ObserveTools("u", jsontext.Value(`{"tools":[{"name":"a"}],"nextCursor":"c1"}`))
	ic.ObserveTools("u", jsontext.Value(`{"tools":[{"name":"b"}]}`))
	if !has("a") || !has("b") {
		t.Fatal("the two pages of one list did not add up")
	}
	ic.ObserveTools("u", jsontext.Value(`{"tools":[{"name":"c"}]}`))
	if has("a") || has("b") || !has("c") {
		t.Fatal("a new complete list did not replace the catalog")
	}
}
