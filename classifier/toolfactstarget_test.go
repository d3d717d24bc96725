package classifier

import (
	"testing"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/sluicehq/sluice/intercept"
)

// TestToolFactsFollowTarget: a tool's facts are kept per tool version,
// its endpoint included: the same definition on an upstream whose
// command line or URL changes (a reload), or on two upstreams, is placed
// where each reaches, and a reload's internal domains place it anew.
func TestToolFactsFollowTarget(t *testing.T) {
	d := func(upstream, target string) *intercept.ActionDescriptor {
		return &intercept.ActionDescriptor{Upstream: upstream, ToolName: "query", ToolDescription: "Run a SQL query.",
			Annotations: jsontext.Value(`{}`), Parameters: jsontext.Value(`{"sql":"select 1"}`), TargetEndpoint: target}
	}
	boundary := func(b *Builtin, d *intercept.ActionDescriptor) string {
		t.Helper()
		v, err := b.Classify(t.Context(), d)
		if err != nil {
			t.Fatal(err)
		}
		return v.Axes.Get(AxisBoundary).Classified
	}
	b, err := NewBuiltin(Options{})
	if err != nil {
		t.Fatal(err)
	}
	local, remote := "stdio:psql postgresql://localhost/app", "stdio:psql postgresql://db.example.com/app"
	for i, c := range []struct{ upstream, target, want string }{
		{"db", local, Local},
		{"db", remote, External},
		{"db", local, Local},
		{"db2", remote, External},
		{"db", "http://127.0.0.1:8080/mcp", Local},
		{"db", "https://db.example.com/mcp", External},
		{"db", local, Local},
	} {
		if got := boundary(b, d(c.upstream, c.target)); got != c.want {
			t.Errorf("%d: %s %s: boundary %s, want %s", i, c.upstream, c.target, got, c.want)
		}
	}
	// A reload naming example.com internal: the same tool version is
	// placed by the new configuration.
	b2, err := NewBuiltin(Options{InternalDomains: []string{"example.com"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, target := range []string{remote, "https://db.example.com/mcp"} {
		if got := boundary(b2, d("db", target)); got != IntraOrg {
			t.Errorf("after reload: %s: boundary %s, want %s", target, got, IntraOrg)
		}
		if got := boundary(b, d("db", target)); got != External {
			t.Errorf("the old classifier: %s: boundary %s, want %s", target, got, External)
		}
	}
}
