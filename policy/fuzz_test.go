package policy

import (
	"context"
	"testing"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/sluicehq/sluice/intercept"
)

// FuzzDecideArgs feeds untrusted tool arguments to a policy whose rules
// read them. Whatever the bytes, the decision is valid, and a transfer is
// never allowed unless its amount is a number no greater than 1000.
func FuzzDecideArgs(f *testing.F) {
	for _, s := range []string{
		`{"amount": 5}`, `{"amount": 5000}`, `{"amount": "5000"}`, `{"\u0061mount": 5000}`,
		`{"amount": 5, "amount": 5000}`, `{"amount": 1e400}`, `[]`, `null`, ``, `{"amount": {"x": 1}}`,
		`{"amount": -0.0}`, `{"amount": 5}garbage`,
	} {
		f.Add([]byte(s))
	}
	p, err := Compile([]byte(`
default: deny
rules:
  - {id: ok, match: {match_tool: transfer}, decision: allow}
  - {id: big, match: {match_tool: transfer}, when: 'args.amount > 1000', decision: require_approval}
`), "fuzz.yaml", Options{})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, args []byte) {
		d := &intercept.ActionDescriptor{ToolName: "transfer", Parameters: jsontext.Value(args)}
		got := intercept.Decide(context.Background(), p, d)
		checkValid(t, got)
		if got.Verdict != intercept.Allow {
			return
		}
		m, err := decodeArgs(jsontext.Value(args))
		if err != nil {
			t.Fatalf("allowed arguments that do not decode: %q (%v)", args, err)
		}
		switch n := m["amount"].(type) {
		case int64:
			if n > 1000 {
				t.Fatalf("allowed amount %d", n)
			}
		case float64:
			if n > 1000 {
				t.Fatalf("allowed amount %v", n)
			}
		default:
			t.Fatalf("allowed a non-numeric amount %#v from %q", m["amount"], args)
		}
	})
}

// FuzzCompile: no policy file makes Compile panic or return both a policy
// and an error.
func FuzzCompile(f *testing.F) {
	f.Add([]byte(routePolicy))
	f.Add([]byte("policy: {allow: [a], deny: [b]}"))
	f.Add([]byte("a: &a [*a]"))
	f.Add([]byte("rules: [{id: x, when: 'args.a', decision: deny}]"))
	f.Fuzz(func(t *testing.T, src []byte) {
		p, err := Compile(src, "fuzz.yaml", Options{})
		if (p == nil) == (err == nil) {
			t.Fatalf("got policy %v and error %v, want exactly one", p != nil, err)
		}
		if p != nil {
			checkValid(t, intercept.Decide(context.Background(), p, &intercept.ActionDescriptor{ToolName: "a"}))
			p.Validate()
		}
	})
}
