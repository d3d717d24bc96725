package policy_test

// Tests from a parser-differential review: each fails on the code it was
// written against.

import (
	"context"
	"os/exec"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/intercept"
	"github.com/sluicehq/sluice/policy"
)

// TestFileURISpellings: reads are matched under a normal form of their URI
// so that "another spelling of a URI is the same read" (README), but
// file:/srv/keys/id_rsa (no authority), file://localhost/srv/keys/id_rsa
// and file:srv/keys/id_rsa keep their own spellings, and neither the deny
// of resource:file:///srv/keys/id_rsa nor the prefix class of
// resource:file:///srv/secret/* reaches them. A server that turns a
// resource URI into a path the way the WHATWG URL parser does (Node's
// url.fileURLToPath, which TypeScript servers use) reads the very file
// policy denies. Each spelling should be decided as the canonical URI is.
func TestFileURISpellings(t *testing.T) {
	p, err := policy.Compile([]byte(`
policy:
  default: allow
  default_read: allow
  tool_classes:
    "resource:file:///srv/secret/*": [source:sensitive]
  rules:
    - {id: no-sensitive, match: {match_any_class: [source:sensitive]}, decision: deny}
  deny: ["resource:file:///srv/keys/id_rsa"]
`), "policy.yaml", policy.Options{})
	if err != nil {
		t.Fatal(err)
	}
	node, _ := exec.LookPath("node")
	for _, c := range []struct{ canonical, spelling string }{
		{"file:///srv/keys/id_rsa", "file:/srv/keys/id_rsa"},
		{"file:///srv/keys/id_rsa", "file://localhost/srv/keys/id_rsa"},
		{"file:///srv/keys/id_rsa", "file:srv/keys/id_rsa"},
		{"file:///srv/secret/pay.csv", "file:/srv/secret/pay.csv"},
		{"file:///srv/secret/pay.csv", "file://LOCALHOST/srv/secret/pay.csv"},
		{"file:///srv/keys/id_rsa", `file:///srv\keys\id_rsa`},
		{"file:///srv/keys/id_rsa", `FILE:/srv/keys/../keys/id_rsa`},
	} {
		decide := func(uri string) intercept.Decision {
			d := &intercept.ActionDescriptor{Method: "resources/read", ToolName: intercept.ResourcePrefix + uri, Upstream: "files", Agent: "a"}
			return intercept.Decide(context.Background(), p, d)
		}
		want, got := decide(c.canonical), decide(c.spelling)
		if want.Verdict != intercept.Deny {
			t.Fatalf("%s: %s (%s), want deny", c.canonical, want.Verdict, want.Reason)
		}
		if got.Verdict != want.Verdict {
			same := ""
			if node != "" {
				out, err := exec.Command(node, "-e", `const u=require("url");process.stdout.write(u.fileURLToPath(process.argv[1])+" "+u.fileURLToPath(process.argv[2]))`, c.canonical, c.spelling).Output()
				if err == nil {
					same = "; Node's fileURLToPath gives " + strings.Replace(string(out), " ", " and ", 1)
				}
			}
			t.Errorf("%s: %s (%s), but %s is %s (%s)%s", c.spelling, got.Verdict, got.Reason, c.canonical, want.Verdict, want.Reason, same)
		}
	}
}
