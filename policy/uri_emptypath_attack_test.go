package policy_test

import (
	"testing"

	"github.com/sluicehq/sluice/intercept"
	"github.com/sluicehq/sluice/policy"
)

// TestAttackServerURIEmptyPath: a web URI with no path fetches its
// server's root, "/" (WHATWG: a special URL's path is never empty; so
// does Python's urllib, and an HTTP request line holds at least "/"), but
// its normal form kept the path empty, so https://intranet.example,
// https://intranet.example?q=x and https://intranet.example#x did not
// start with the prefix resource:https://intranet.example/ that classes
// the server: read unclassed, under default_read, and never remembered
// as the source a route rule names.
func TestAttackServerURIEmptyPath(t *testing.T) {
	p, err := policy.Compile([]byte(`
policy:
  default: allow
  default_read: allow
  tool_classes:
    "resource:https://intranet.example/*": [source:sensitive]
    "resource:ftp://files.example/*": [source:sensitive]
  rules:
    - id: no-intranet
      match: {match_any_class: [source:sensitive]}
      decision: deny
`), "policy.yaml", policy.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, uri := range []string{
		"https://intranet.example/",
		"https://intranet.example",
		"https://intranet.example?q=payroll",
		"https://intranet.example#top",
		"https://user@intranet.example:443",
		"HTTPS://INTRANET.EXAMPLE.",
		"https:intranet.example?q=payroll",
		"ftp://files.example",
	} {
		got, err := decideRead(p, uri)
		if err != nil {
			continue // refused before policy: fine
		}
		if got != intercept.Deny {
			t.Errorf("resources/read %s: %s, want deny (it fetches the root of the server resource:…/* classes)", uri, got)
		}
	}
	for _, uri := range []string{"https://intranet.example.evil", "https://intranet.example:8443", "https://intranet.examplex?q=1"} {
		if got, err := decideRead(p, uri); err == nil && got == intercept.Deny {
			t.Errorf("resources/read %s: denied, but it is another server than the rule names", uri)
		}
	}
}
