package policy_test

import (
	"context"
	"encoding/json"
	"os/exec"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/intercept"
	"github.com/sluicehq/sluice/policy"
)

// The tests in this file were written by a review of the changes since
// d8d784f; each fails on the code it was written against.

// TestFileURIWhatwgSpellingsLeft: normURI reads a file: URI "as the WHATWG
// URL parser reads it", but not all of it: the WHATWG parser strips
// leading and trailing spaces (C0 controls too, which the gateway refuses
// before policy), and a TypeScript server's fileURLToPath(new URL(uri))
// drops the query and the fragment, so " file:///srv/keys/id_rsa",
// "file:///srv/keys/id_rsa " and "file:///srv/keys/id_rsa?x" / "#x" are all
// the file /srv/keys/id_rsa. The gateway admits each as a resources/read
// uri and policy reads it as another resource: the denied read is
// allowed. Each should be decided as file:///srv/keys/id_rsa (or refused).
func TestFileURIWhatwgSpellingsLeft(t *testing.T) {
	p, err := policy.Compile([]byte(`
policy:
  default: allow
  default_read: allow
  deny: ["resource:file:///srv/keys/id_rsa"]
`), "policy.yaml", policy.Options{})
	if err != nil {
		t.Fatal(err)
	}
	node, _ := exec.LookPath("node")
	for _, spelling := range []string{" file:///srv/keys/id_rsa", "file:///srv/keys/id_rsa ", "file:///srv/keys/id_rsa?x", "file:///srv/keys/id_rsa#x"} {
		uri, _ := json.Marshal(spelling)
		msgs, _, err := intercept.Decode([]byte(`{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":` + string(uri) + `}}`))
		if err != nil {
			continue // refused before policy: fine
		}
		m := msgs[0]
		d := &intercept.ActionDescriptor{Method: "resources/read", ToolName: m.ActionName(), Upstream: "files", Agent: "a"}
		got := intercept.Decide(context.Background(), p, d)
		if got.Verdict == intercept.Deny {
			continue
		}
		same := ""
		if node != "" {
			out, err := exec.Command(node, "-e", `process.stdout.write(require("url").fileURLToPath(new URL(process.argv[1])))`, spelling).Output()
			if err == nil {
				same = "; Node's fileURLToPath(new URL(uri)) gives " + strings.TrimSpace(string(out))
			}
		}
		t.Errorf("resources/read %q: %s (%s), but file:///srv/keys/id_rsa is denied%s", spelling, got.Verdict, got.Reason, same)
	}
}

// TestServerURISpellings: a prefix class on a web resource
// ("resource:https://intranet.example/*") was dodged by naming the same
// server otherwise — userinfo, the scheme's default port, a trailing dot
// on the host, upper case — which a server's fetch of the URI goes to all
// the same. Each is read as the server the rule names; another port or
// host is not.
func TestServerURISpellings(t *testing.T) {
	p, err := policy.Compile([]byte(`
policy:
  default: allow
  default_read: allow
  tool_classes:
    "resource:https://intranet.example/*": [source:sensitive]
  rules:
    - id: no-intranet
      match: {match_any_class: [source:sensitive]}
      decision: deny
`), "policy.yaml", policy.Options{})
	if err != nil {
		t.Fatal(err)
	}
	decide := func(uri string) intercept.Verdict {
		v, err := decideRead(p, uri)
		if err != nil {
			t.Fatalf("%s: %v", uri, err)
		}
		return v
	}
	for _, uri := range []string{
		"https://intranet.example/payroll", "https://user:pw@intranet.example/payroll", "https://intranet.example:443/payroll",
		"https://intranet.example./payroll", "HTTPS://INTRANET.EXAMPLE.:443/payroll", "https://@intranet.example/payroll",
	} {
		if got := decide(uri); got != intercept.Deny {
			t.Errorf("resources/read %s: %s, want deny (it is https://intranet.example/payroll)", uri, got)
		}
	}
	for _, uri := range []string{"https://intranet.example:8443/payroll", "https://intranet.example.evil/payroll", "http://intranet.example/payroll"} {
		if got := decide(uri); got == intercept.Deny {
			t.Errorf("resources/read %s: denied, but it is another server than the rule names", uri)
		}
	}
}
