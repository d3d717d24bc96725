package inventory

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/go-json-experiment/json/jsontext"
)

// naiveForeign is the search foreignIndex replaced: every name, one by
// one, in each spelling a model reads as it (snakeName), in the text with '-' and '.' joining words taken as '_'.
func naiveForeign(norm string, names []string) bool {
	folded := []byte(norm)
	for i, c := range folded {
		if (c == '-' || c == '.') && joins(norm, i) {
			folded[i] = '_'
		}
	}
	for _, name := range names {
		if !distinctive(name) {
			continue
		}
		low, snake := strings.ToLower(name), snakeName(name)
		if indexWord(norm, low) >= 0 || isIdentByte(low[0]) &&
			(indexWord(string(folded), low) >= 0 || indexWord(string(folded), snake) >= 0) {
			return true
		}
	}
	return false
}

// TestForeignIndexMatchesNaiveSearch: over every text of the real corpus
// against every other tool name, and over crafted edge cases, the index
// finds a foreign name exactly when the one-by-one search does.
func TestForeignIndexMatchesNaiveSearch(t *testing.T) {
	tools := loadRealTools(t)
	var names []string
	for _, rt := range tools {
		names = append(names, rt.tool.Name)
	}
	names = append(names, "-odd-name", ".dotted.name", "foo-bar.baz", "GetThing")
	slices.Sort(names)
	names = slices.Compact(names)
	x := newForeignIndex(names, nil)
	texts := []string{"call foo-bar.baz now", "x-foo-bar.baz", "foo-bar.bazz", "afoo-bar.baz", "use -odd-name", "gething", "the get_thing tool", "run .dotted.name!"}
	for i, rt := range tools {
		if i%7 == 0 { // a seventh of the corpus keeps the naive side quick
			texts = append(texts, normalize(rt.tool.Description, false))
		}
	}
	for _, s := range texts {
		at, n := x.find(s, false)
		if got, want := at >= 0, naiveForeign(s, names); got != want {
			t.Errorf("%q: index found %v (at %d), one-by-one search %v", s, got, at, want)
		}
		if at >= 0 && indexWord(s, s[at:at+n]) < 0 {
			t.Errorf("%q: index reports %q at %d, which is not a word there", s, s[at:at+n], at)
		}
	}
}

// BenchmarkObserveManyUpstreams puts every corpus server behind one
// inventory, as an aggregating gateway would, reports the cross-server
// references found, then measures what one more tools/list costs (each
// rescans every upstream's tools against the others' names).
func BenchmarkObserveManyUpstreams(b *testing.B) {
	inv, err := New(Options{Dir: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	byServer := map[string][]Tool{}
	for _, rt := range loadRealTools(&testing.T{}) {
		byServer[rt.server] = append(byServer[rt.server], rt.tool)
	}
	var first string
	for server, tools := range byServer {
		first = cmp.Or(first, server)
		v, _ := jsontextTools(tools)
		inv.ObserveTools(server, v)
	}
	flagged := 0
	for server, tools := range byServer {
		for _, tl := range tools {
			if slices.ContainsFunc(inv.RiskFactors(server, tl.Name), func(f Finding) bool { return f.Rule == "cross_server_reference" }) {
				flagged++
			}
		}
	}
	b.Logf("%d upstreams; %d tools with a cross_server_reference", len(byServer), flagged)
	// Two versions of one upstream's list, so that every observation is a
	// change.
	v1, _ := jsontextTools(byServer[first])
	changed := slices.Clone(byServer[first])
	changed[0].Description += " (changed)"
	v2, _ := jsontextTools(changed)
	b.ResetTimer()
	for i := range b.N {
		inv.ObserveTools(first, []jsontext.Value{v1, v2}[i%2])
	}
}

func jsontextTools(tools []Tool) (jsontext.Value, error) {
	var b strings.Builder
	b.WriteString(`{"tools":[`)
	for i, tl := range tools {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"name":%q,"description":%q`, tl.Name, tl.Description)
		if len(tl.InputSchema) > 0 {
			b.WriteString(`,"inputSchema":` + string(tl.InputSchema))
		}
		b.WriteByte('}')
	}
	b.WriteString("]}")
	return jsontext.Value(b.String()), nil
}
