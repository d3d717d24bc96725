package intercept

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/sluicehq/sluice/internal/costratio"
)

// dropPoison is a ListScreener that withholds the items holding "poison"
// and instructions holding it.
type dropPoison struct{}

func (dropPoison) ObserveTools(string, jsontext.Value) {}
func (dropPoison) ScreenListed(_, _ string, items []jsontext.Value) []bool {
	show := make([]bool, len(items))
	for i, it := range items {
		show[i] = !bytes.Contains(it, []byte("poison"))
	}
	return show
}
func (dropPoison) ScreenInstructions(_, _, s string) bool { return !strings.Contains(s, "poison") }

// caseVariants returns the first n spellings of word in other cases.
func caseVariants(word string, n int) []string {
	var out []string
	for mask := 0; len(out) < n && mask < 1<<len(word); mask++ {
		b := []byte(word)
		for i := range b {
			if mask&(1<<i) != 0 {
				b[i] = b[i] - 'a' + 'A'
			}
		}
		out = append(out, string(b))
	}
	return out
}

// TestAttackListVariantsFlood: a list result's members are screened
// whatever their case ("Resources" as well as "resources", as Go's
// encoding/json reads them), and each one an item was withheld from was
// put back by rewriting the whole result: a pass over every member for
// each. An upstream answering resources/templates/list with thousands of
// spellings of resourceTemplates (17 letters: 131,072 of them fit in an
// answer), each holding an item the inventory withholds, cost the square
// of their number. Screening must cost about what one member holding as
// many items does.
func TestAttackListVariantsFlood(t *testing.T) {
	const n = 4096
	var variants, plain bytes.Buffer
	variants.WriteByte('{')
	plain.WriteString(`{"resourceTemplates":[`)
	for i, k := range caseVariants("resourcetemplates", n) {
		if i > 0 {
			variants.WriteByte(',')
			plain.WriteByte(',')
		}
		variants.WriteString(`"` + k + `":[{"name":"poison"}]`)
		plain.WriteString(`{"name":"poison","x":"` + strings.Repeat("x", len(k)) + `"}`)
	}
	variants.WriteByte('}')
	plain.WriteString(`]}`)
	ic := &Interceptor{Decider: &StaticDecider{}, Observer: dropPoison{}}
	cc := CallContext{Upstream: "u"}
	screen := func(result []byte) func() {
		return func() { ic.ScreenListResult(cc, "resources/templates/list", result) }
	}
	ratio, v, p := costratio.Of(screen(variants.Bytes()), screen(plain.Bytes()))
	t.Logf("%d spellings: %v; one member of as many items: %v; ratio %.1f", n, v, p, ratio)
	// About 8 here; the quadratic screen this guards against rewrote the
	// whole result once per spelling, on the order of n (4096) times one
	// member's cost. 50 leaves room for a loaded machine (20 was once
	// reached with two other test runs going).
	if ratio > 50 {
		t.Errorf("%d spellings of resourceTemplates took %v to screen, %.0f times the %v of one member holding as many items (want the result rewritten once)", n, v, ratio, p)
	}

	// What the screen is for still holds: withheld items are left out in
	// every spelling, other members stay as they were, instructions
	// withheld in any spelling are removed.
	for _, c := range []struct{ method, in, want string }{
		{"resources/list", `{"resources":[{"name":"a"},{"name":"poison"}],"Resources":[{"name":"poison"}],"x":1,"RESOURCES":[{"name":"b"}]}`,
			`{"resources":[{"name":"a"}],"Resources":[],"x":1,"RESOURCES":[{"name":"b"}]}`},
		{"initialize", `{"instructions":"poison","Instructions":"fine","INSTRUCTIONS":"poison too","y":[1]}`,
			`{"Instructions":"fine","y":[1]}`},
		{"prompts/list", `{"prompts":[{"name":"a"}]}`, `{"prompts":[{"name":"a"}]}`},
	} {
		out, _ := ic.ScreenListResult(cc, c.method, jsontext.Value(c.in))
		if string(out) != c.want {
			t.Errorf("%s %s:\ngot  %s\nwant %s", c.method, c.in, out, c.want)
		}
	}
}

// TestFoldedDuplicateFindsExact: the case-variant walk reads without the
// decoder's own duplicate check (validation did it), and still finds two
// members of one name, in small objects and in large ones.
func TestFoldedDuplicateFindsExact(t *testing.T) {
	var large strings.Builder
	large.WriteString(`{"x":{`)
	for i := range 40 {
		large.WriteString(`"k` + strings.Repeat("i", i) + `":1,`)
	}
	large.WriteString(`"k":2}}`)
	for _, v := range []string{`{"a":1,"a":2}`, `[{"b":{"a":1,"a":2}}]`, large.String()} {
		if _, _, found := foldedDuplicate(jsontext.Value(v)); !found {
			t.Errorf("%.60s…: no duplicate found, want one", v)
		}
	}
}

// TestAttackParamHeadersFlood: a tool marking arguments with
// x-mcp-header has each call's arguments read for them, twice per call
// (the header check and the upstream request), and they were read once
// per marked argument: under a tool marking 64 (the most taken), a call
// of 1 MiB of arguments cost 2 s, 64 times a tool marking one. The
// arguments must be read about once, whatever the number of marks.
func TestAttackParamHeadersFlood(t *testing.T) {
	var props []string
	for k := range maxParamHeaders {
		props = append(props, fmt.Sprintf(`"p%d":{"type":"string","x-mcp-header":"H%d"}`, k, k))
	}
	i := &Interceptor{}
	i.ObserveTools("many", []byte(`{"tools":[{"name":"t","inputSchema":{"type":"object","properties":{`+strings.Join(props, ",")+`}}}]}`))
	i.ObserveTools("one", []byte(`{"tools":[{"name":"t","inputSchema":{"type":"object","properties":{`+props[0]+`}}}]}`))
	var b strings.Builder
	b.WriteString(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t","arguments":{`)
	for k := 0; b.Len() < 256<<10; k++ {
		b.WriteString(`"a` + strconv.Itoa(k) + `":1,`)
	}
	b.WriteString(`"p63":"last","p0":"first"}}}`)
	m, err := DecodeMessage([]byte(b.String()))
	if err != nil {
		t.Fatal(err)
	}
	read := func(up string) func() { return func() { i.ParamHeaders(up, m) } }
	ratio, many, one := costratio.Of(read("many"), read("one"))
	t.Logf("%d marks: %v; one: %v; ratio %.1f", maxParamHeaders, many, one, ratio)
	if ratio > 20 {
		t.Errorf("%d marked arguments took %v to read, %.0f times the %v of one (want the arguments read once)", maxParamHeaders, many, ratio, one)
	}
	if h := i.ParamHeaders("many", m); len(h) != 2 || h["Mcp-Param-H63"] != "last" || h["Mcp-Param-H0"] != "first" {
		t.Errorf("got %v, want Mcp-Param-H0: first and Mcp-Param-H63: last", h)
	}
}
