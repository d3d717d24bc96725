package intercept

import (
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/go-json-experiment/json/jsontext"
)

// TestCatalogNamesKeepEveryListedTool: the tools a route rule is matched
// against are every tool the upstream listed, whatever page or listing
// came last, and none (every tool the policy names) past maxCatalogTools.
func TestCatalogNamesKeepEveryListedTool(t *testing.T) {
	i := &Interceptor{}
	if got := i.catalogNames("web"); got != nil {
		t.Fatalf("before a listing: got %q, want nil", got)
	}
	i.ObserveTools("web", jsontext.Value(`{"tools":[{"name":"web_search"}],"nextCursor":"c"}`))
	i.ObserveTools("web", jsontext.Value(`{"tools":[{"name":"lookup"}]}`))
	i.ObserveTools("web", jsontext.Value(`{"tools":[{"name":"lookup"}]}`)) // the last page anew
	got := slices.Sorted(slices.Values(i.catalogNames("web")))
	if !slices.Equal(got, []string{"lookup", "web_search"}) {
		t.Errorf("got %q, want lookup and web_search", got)
	}
	i.ObserveTools("empty", jsontext.Value(`{"tools":[]}`))
	if got := i.catalogNames("empty"); got == nil || len(got) != 0 {
		t.Errorf("an empty list: got %#v, want none listed, not nil", got)
	}
	const page = 1000
	for n := 0; n <= maxCatalogTools/page; n++ {
		var b strings.Builder
		b.WriteString(`{"tools":[`)
		for k := range page {
			if k > 0 {
				b.WriteByte(',')
			}
			b.WriteString(`{"name":"t` + strconv.Itoa(n*page+k) + `"}`)
		}
		b.WriteString(`],"nextCursor":"c"}`)
		i.ObserveTools("many", jsontext.Value(b.String()))
	}
	if got := i.catalogNames("many"); got != nil {
		t.Errorf("past maxCatalogTools: got %d names, want nil", len(got))
	}
}
