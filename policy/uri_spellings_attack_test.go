package policy_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/sluicehq/sluice/intercept"
	"github.com/sluicehq/sluice/policy"
)

// decideRead is p's verdict on a resources/read of uri from upstream web,
// decoded as the gateway decodes it (an error if it refuses the request).
func decideRead(p *policy.Policy, uri string) (intercept.Verdict, error) {
	q, _ := json.Marshal(uri)
	msgs, _, err := intercept.Decode([]byte(`{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":` + string(q) + `}}`))
	if err != nil {
		return "", err
	}
	d := &intercept.ActionDescriptor{Method: "resources/read", ToolName: msgs[0].ActionName(), Upstream: "web", Agent: "a"}
	return intercept.Decide(context.Background(), p, d).Verdict, nil
}

// TestAttackServerURINumericSpellings (attacker review): a web resource
// URI names its server however it is spelt, as the server's fetch (WHATWG
// URL, Python's urllib with getaddrinfo) reads it. A port with leading
// zeros (:0443 is 443) and an IPv4 address in another notation (a single
// number, hex, octal, fewer than four parts) still named the server a rule
// closes without matching it.
func TestAttackServerURINumericSpellings(t *testing.T) {
	p, err := policy.Compile([]byte(`
policy:
  default: allow
  default_read: allow
  tool_classes:
    "resource:https://intranet.example/*": [source:sensitive]
    "resource:http://10.0.0.1/*": [source:sensitive]
    "resource:http://192.168.*": [source:sensitive]
    "resource:https://docs.*": [read]
  rules:
    - id: no-intranet
      match: {match_any_class: [source:sensitive]}
      decision: deny
`), "policy.yaml", policy.Options{})
	if err != nil {
		t.Fatal(err)
	}
	readsDenied(t, p, []string{
		"https://intranet.example:0443/payroll", "https://intranet.example:00443/payroll",
		"http://167772161/x", "http://0xa.0.0.1/x", "http://0xA000001/x", "http://012.0.0.1/x", "http://10.1/x", "http://10.0.1/x", "http://10.0.0.1.:080/x",
		"http://192.168.1.1/x", "http://3232235777/x", "http://0xc0.0xa8.1.1:0080/x",
		"https://intra\tnet.example/payroll", "https://intranet.example\n/payroll",
	}, []string{"http://10.0.0.2/x", "http://0x10.0.0.1/x", "http://10.0.0.1.1/x", "https://intranet.example:4430/payroll", "http://010.0.0.1/x", "http://192.1680.example/x", "http://192.169.1.1/x"})
}

// TestReadPrefixWithinHost: a read prefix that ends within a server URI's
// host keeps its dot: "resource:https://docs.*" does not name
// https://docsevil.example (a server URI's trailing dot is trimmed only
// for a whole host).
func TestReadPrefixWithinHost(t *testing.T) {
	p, err := policy.Compile([]byte(`
policy:
  default: allow
  default_read: deny
  tool_classes:
    "resource:https://docs.*": [docs]
  rules:
    - id: docs
      match: {match_any_class: [docs]}
      decision: allow
`), "policy.yaml", policy.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for uri, want := range map[string]intercept.Verdict{
		"https://docs.example/a": intercept.Allow, "https://DOCS.example.:443/a": intercept.Allow,
		"https://docsevil.example/a": intercept.Deny,
	} {
		msgs, _, err := intercept.Decode([]byte(`{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":"` + uri + `"}}`))
		if err != nil {
			t.Fatal(err)
		}
		d := &intercept.ActionDescriptor{Method: "resources/read", ToolName: msgs[0].ActionName(), Upstream: "web", Agent: "a"}
		if got := intercept.Decide(context.Background(), p, d).Verdict; got != want {
			t.Errorf("resources/read %s: %s, want %s", uri, got, want)
		}
	}
}

// TestAttackServerURIHostSpellings (attacker review): a WHATWG parser (a
// TypeScript server's new URL, fetch) reads a special scheme's URI with
// any number of slashes after the colon (http:intranet.example/x,
// http:///intranet.example/x), percent-decodes the host and maps it as
// UTS #46 does (fullwidth letters, the ideographic full stop), and reads
// an IPv6 host in any of its spellings, an IPv4-mapped one reaching the
// IPv4 address. These named the server a rule closes and were allowed.
func TestAttackServerURIHostSpellings(t *testing.T) {
	p, err := policy.Compile([]byte(`
policy:
  default: allow
  default_read: allow
  tool_classes:
    "resource:https://intranet.example/*": [source:sensitive]
    "resource:http://10.0.0.1/*": [source:sensitive]
    "resource:http://[fd00::1]/*": [source:sensitive]
  rules:
    - id: no-intranet
      match: {match_any_class: [source:sensitive]}
      decision: deny
`), "policy.yaml", policy.Options{})
	if err != nil {
		t.Fatal(err)
	}
	readsDenied(t, p, []string{
		"https:intranet.example/payroll", "https:/intranet.example/payroll", "https:///intranet.example/payroll", `https:\\\intranet.example/payroll`,
		"https://ＩＮＴＲＡＮＥＴ.example/payroll", "https://intranet。example/payroll", "https://%69ntranet.example/payroll", "https://intranet%2eexample/payroll",
		"https://user@%49NTRANET.example:443/payroll",
		"http://%31%30.0.0.1/x", "http://[::ffff:10.0.0.1]/x", "http://[::ffff:a00:1]/x", "http:10.0.0.1/x",
		"http://[fd00:0::1]/x", "http://[FD00:0:0:0:0:0:0:1]/x",
	}, []string{"https://intranet.example.evil/x", "https://xn--ntranet-9ya.example/x", "http://[fd00::2]/x", "http://[::ffff:10.0.0.2]/x", "note:intranet.example/payroll", "https://evil.example/intranet.example/payroll"})
}

// readsDenied checks that p denies a resources/read of each of closed
// (the server a rule closes, however spelt; a URI refused outright is as
// good) and of none of open (other servers).
func readsDenied(t *testing.T, p *policy.Policy, closed, open []string) {
	t.Helper()
	for _, uri := range closed {
		got, err := decideRead(p, uri)
		if err != nil {
			t.Logf("%q refused: %v", uri, err)
			continue
		}
		if got != intercept.Deny {
			t.Errorf("resources/read %q: %s, want deny (the server a rule closes)", uri, got)
		}
	}
	for _, uri := range open {
		if got, err := decideRead(p, uri); err == nil && got == intercept.Deny {
			t.Errorf("resources/read %q: denied, but it is another server than the rules name", uri)
		}
	}
}

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
	readsDenied(t, p, []string{
		"https://intranet.example/",
		"https://intranet.example",
		"https://intranet.example?q=payroll",
		"https://intranet.example#top",
		"https://user@intranet.example:443",
		"HTTPS://INTRANET.EXAMPLE.",
		"https:intranet.example?q=payroll",
		"ftp://files.example",
	}, []string{"https://intranet.example.evil", "https://intranet.example:8443", "https://intranet.examplex?q=1"})
}
