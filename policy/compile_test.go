package policy

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/intercept"
)

func TestCompileShapes(t *testing.T) {
	tests := []struct {
		name, src string
		wantErr   string // empty: compiles
	}{
		{"bare document", "default: allow\n", ""},
		{"under policy, siblings belong to sluice.yaml", "listen: :8080\nupstreams: []\npolicy:\n  default: allow\n", ""},
		{"anchors and aliases", "tool_classes:\n  a: &src [source:local]\n  b: *src\nallow: [a, b]\n", ""},
		{"policy: null", "policy:\n", "the policy is empty"},
		{"two documents", "default: deny\n---\ndefault: allow\n", "more than one YAML document"},
		{"a list", "- a\n", "the policy must be a mapping (key: value), not a list"},
		{"recursive alias", "rules: &r [*r]\n", "a rule must be a mapping"},
		{"bad upstream in a pinned name", "allow: [/echo]\n", `"/echo" is not upstream/tool`},
		{"class list not a list", "tool_classes: {a: source}\n", "the classes of a tool must be a list"},
		{"empty tool name", "deny: ['']\n", "a tool name is empty"},
		{"manifest says nothing", "manifests: {a: {}}\n", `the manifest of "a" says nothing`},
		{"window in days", "route_rules: [{id: r, after: {match_tool: a}, deny: {match_tool: b}, window: 7d}]\n", ""},
		// 213504 days overflow time.Duration to about 27 minutes: a rule
		// meant to remember for good would forget within the half hour.
		{"window in days overflows", "route_rules: [{id: r, after: {match_tool: a}, deny: {match_tool: b}, window: 213504d}]\n", `"213504d" is not a window`},
		{"window in hours overflows", "route_rules: [{id: r, after: {match_tool: a}, deny: {match_tool: b}, window: 5124096h}]\n", `"5124096h" is not a window`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Compile([]byte(tt.src), "p.yaml", Options{})
			switch {
			case tt.wantErr == "" && err != nil:
				t.Errorf("got %v, want no error", err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Errorf("got %v, want an error containing %q", err, tt.wantErr)
			}
		})
	}
}

// Aliases cannot make loading explode, and the number of errors reported is
// bounded.
func TestCompileAliasBomb(t *testing.T) {
	var b strings.Builder
	b.WriteString("tool_classes:\n  l0: &l0 [a, a, a, a, a, a, a, a, a, a]\n")
	for i := 1; i < 9; i++ {
		fmt.Fprintf(&b, "  l%d: &l%d [*l%d, *l%d, *l%d, *l%d, *l%d, *l%d, *l%d, *l%d, *l%d, *l%d]\n", i, i, i-1, i-1, i-1, i-1, i-1, i-1, i-1, i-1, i-1, i-1)
	}
	start := time.Now()
	_, err := Compile([]byte(b.String()), "bomb.yaml", Options{})
	if err == nil {
		t.Fatal("got no error, want one")
	}
	if n := len(err.(interface{ Unwrap() []error }).Unwrap()); n > maxErrors+1 {
		t.Errorf("got %d errors, want at most %d", n, maxErrors+1)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("took %v", d)
	}
}

// Route memory written before a recompile with the same Store is seen
// after it, as the Watcher relies on.
func TestStoreSharedAcrossCompiles(t *testing.T) {
	s := NewMemoryStore(MemoryOptions{})
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	opts := Options{Store: s, Now: func() time.Time { return now }}
	p1, err := Compile([]byte(routePolicy), "p.yaml", opts)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	p1.Forwarded(ctx, call("read_document"), intercept.Decision{Verdict: intercept.Allow})
	p2, err := Compile([]byte(routePolicy+"deny: [x]\n"), "p.yaml", opts)
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := p2.Decide(ctx, call("web_search")); got.Reason != ReasonRouteDeny {
		t.Errorf("got %s, want %s", got.Reason, ReasonRouteDeny)
	}
}

func TestLoadErrorIs(t *testing.T) {
	_, err := Compile([]byte("default: maybe\n"), "p.yaml", Options{})
	var le *LoadError
	if !errors.As(err, &le) || !errors.Is(err, ErrInvalid) {
		t.Fatalf("got %T %v, want a *LoadError matching ErrInvalid", err, err)
	}
	if le.File != "p.yaml" || le.Line != 1 || le.Column != 10 || le.Path != "default" {
		t.Errorf("got %+v, want p.yaml:1:10 at default", le)
	}
}
