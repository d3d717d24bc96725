package inventory

import (
	"testing"

	"github.com/go-json-experiment/json/jsontext"
)

// Known answers computed independently (Python's json.dumps with sorted
// keys and no whitespace, which is RFC 8785 for this content, then
// SHA-256), from input that is deliberately not canonical.
func TestHashKnownAnswers(t *testing.T) {
	page, err := ParsePage(jsontext.Value(`{"tools":[
		{"outputSchema": {"type": "object"}, "description": "Echo <b>.", "name": "echo", "_meta": {"pinned": true}},
		{"name": "add", "title": "Add", "description": "Add two numbers \u00e9\u20ac\ud83d\ude00.",
		 "inputSchema": {"required": ["a", "b"], "type": "object", "properties": {"b": {"type": "number"}, "a": {"maximum": 1e2, "type": "number"}}},
		 "outputSchema": null, "annotations": {"readOnlyHint": true}}
	]}`))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"add":  "9ee24d2c9a3f8b07195fecba52f6f92a8785e9b3517e3e33395e47d395d0594d",
		"echo": "d5d7d2cdfc4ce3a17092403e372fb9b3b13c5bfa46a27d8446c3a4b81851c37e",
	}
	for _, tool := range page.Tools {
		if tool.Hash != want[tool.Name] {
			t.Errorf("hash of %s = %s, want %s", tool.Name, tool.Hash, want[tool.Name])
		}
	}
	snap, err := newSnapshot("u", page.Tools, clock())
	if err != nil {
		t.Fatal(err)
	}
	if want := "dab597d5230efa887f517243e642bcdb568396dfdf2c293e9529df569a4bfff1"; snap.Hash != want {
		t.Errorf("tool_inventory_hash = %s, want %s", snap.Hash, want)
	}
	if snap.Tools[0].Name != "add" || snap.Tools[1].Name != "echo" {
		t.Errorf("tools not sorted: %s, %s", snap.Tools[0].Name, snap.Tools[1].Name)
	}
	if _, ok := snap.Tool("echo"); !ok {
		t.Error("Tool(echo) not found")
	}
	if _, ok := snap.Tool("nope"); ok {
		t.Error("Tool(nope) found")
	}
}

func TestDiffValues(t *testing.T) {
	p := Tool{Name: "t", InputSchema: jsontext.Value(`{"properties":{"a":{"type":"string"},"gone":{"type":"number"}},"required":["a"]}`)}
	o := Tool{Name: "t", InputSchema: jsontext.Value(`{"properties":{"a":{"type":"integer"},"new/x":{"type":"string"}},"required":["a","new/x"]}`)}
	fs := diffTool(p, o)
	if len(fs) != 1 || fs[0].Field != "inputSchema" {
		t.Fatalf("diffTool = %+v", fs)
	}
	var got []string
	for _, v := range fs[0].Values {
		got = append(got, v.Path+" "+string(v.Pinned)+" -> "+string(v.Observed))
	}
	want := []string{
		`/properties/a/type "string" -> "integer"`,
		`/properties/gone {"type":"number"} -> `,
		`/properties/new~1x  -> {"type":"string"}`,
		`/required/1  -> "new/x"`,
	}
	if len(got) != len(want) {
		t.Fatalf("changes %q, want %q", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("change %d = %q, want %q", i, got[i], want[i])
		}
	}
}

func TestTextDelta(t *testing.T) {
	for _, tt := range []struct{ a, b, pre, am, bm, post string }{
		{"Search the web.", "Search the web. Also read ~/.ssh.", "Search the web.", "", " Also read ~/.ssh.", ""},
		{"Read a file.", "Read a secret file.", "Read a ", "", "secret ", "file."},
		{"abc", "abd", "", "abc", "abd", ""},
		{"same", "same", "same", "", "", ""},
	} {
		pre, am, bm, post := textDelta(tt.a, tt.b)
		if pre != tt.pre || am != tt.am || bm != tt.bm || post != tt.post {
			t.Errorf("textDelta(%q, %q) = %q %q %q %q, want %q %q %q %q", tt.a, tt.b, pre, am, bm, post, tt.pre, tt.am, tt.bm, tt.post)
		}
	}
}
