package policy

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/sluicehq/sluice/intercept"
)

func atkCompile(t *testing.T, src string) *Policy {
	t.Helper()
	p, err := Compile([]byte(src), "attack.yaml", Options{})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// The withheld re-evaluation (RFC-010 §12.3) turns any error of a condition
// that reads classification.* into "does not hold" — also an error caused by
// the agent's own arguments. A deny rule that would fail closed
// (policy_error) then does not apply at all, and the call is allowed.
func TestAttackWithheldSwallowsArgsError(t *testing.T) {
	p := atkCompile(t, `
default: allow
rules:
  - id: big-payments
    match: {match_tool: [pay]}
    when: args.amount > 1000 || classification.risk == "high"
    decision: deny
`)
	d := call("pay")
	d.Parameters = jsontext.Value(`{"amount": "5000"}`) // a string: a type error
	// Without withholding: a type error fails closed.
	if got, _ := p.Decide(context.Background(), d); got.Verdict != intercept.Deny {
		t.Fatalf("plain: %s/%s, want deny", got.Verdict, got.Reason)
	}
	// As the Advisor decides its base decision (internal/govern/advice.go),
	// which wins over a deny that differs from it.
	d.Classification = map[string]any{"injection_suspected": false, "tool_poisoning": false, ClassificationWithheld: true}
	if got, _ := p.Decide(context.Background(), d); got.Verdict != intercept.Deny {
		t.Errorf("withheld: %s/%s: an args type error in a deny rule that also reads classification.* lets the call through", got.Verdict, got.Reason)
	}
}

// Duplicate names are rejected because "an upstream might read the other
// duplicate"; names that differ only in case are not, yet Go's
// encoding/json (the most common MCP server stack in Go) matches struct
// fields case-insensitively and the last one wins.
func TestAttackArgsCaseVariantKeys(t *testing.T) {
	p := atkCompile(t, `
default: deny
rules:
  - id: small-payments
    match: {match_tool: [pay]}
    when: args.amount <= 1000
    decision: allow
`)
	raw := `{"amount": 5, "AMOUNT": 5000}`
	var upstream struct{ Amount int }
	if err := json.Unmarshal([]byte(raw), &upstream); err != nil {
		t.Fatal(err)
	}
	d := call("pay")
	d.Parameters = jsontext.Value(raw)
	got, _ := p.Decide(context.Background(), d)
	if got.Verdict == intercept.Allow {
		t.Errorf("allowed %s (rule %s) while a Go upstream reads amount=%d", raw, got.RuleID, upstream.Amount)
	}
}

// Tool names are compared in NFC on both sides; manifest keys and the
// agent's name are not, so an agent whose name is the NFC spelling of a
// manifest written in NFD (or the other way round) escapes its manifest.
func TestAttackManifestAgentNFD(t *testing.T) {
	nfd := "jose\u0301"    // José, decomposed, as some editors write it
	nfcName := "jos\u00e9" // José, composed, as the IdP issues it
	p := atkCompile(t, `
default: allow
tool_classes:
  delete_all: [danger]
  read: [safe]
manifests:
  "`+nfd+`": {allowed_classes: [safe]}
`)
	for _, agent := range []string{nfd, nfcName} {
		d := call("delete_all")
		d.Agent = agent
		got, _ := p.Decide(context.Background(), d)
		if got.Verdict == intercept.Allow {
			t.Errorf("agent %+q: allowed delete_all (%s); the manifest of %+q (the same name after NFC) forbids it", agent, got.Reason, nfd)
		}
	}
}

// CEL's == and != compare values of different types as unequal, and in
// finds no element of another type: not an error. A deny rule on
// `args.force == true` then lets `"force": "true"` through, which
// mcp-go's RequireBool/GetBool read as true (GetInt/RequireInt read
// "1000000" as 1000000; others take ["x"] for "x"). A wrong type is an
// error that denies, as it is for `>`.
func TestAttackCrossTypeEquality(t *testing.T) {
	for _, tc := range []struct {
		rule, args string
		want       intercept.Verdict
	}{
		// Deny rules (default allow): the wrong type must not escape them.
		{`{id: r, when: 'args.force == true', decision: deny}`, `{"force": "true"}`, intercept.Deny},
		{`{id: r, when: 'args.force == true', decision: deny}`, `{"force": 1}`, intercept.Deny},
		{`{id: r, when: 'args.amount == 1000000', decision: deny}`, `{"amount": "1000000"}`, intercept.Deny},
		{`{id: r, when: 'args.to == "ceo@corp.com"', decision: deny}`, `{"to": ["ceo@corp.com"]}`, intercept.Deny},
		{`{id: r, when: 'args.currency in ["BTC", "ETH"]', decision: deny}`, `{"currency": ["BTC"]}`, intercept.Deny},
		{`{id: r, when: 'args.currency in ["BTC", "ETH"]', decision: deny}`, `{"currency": null}`, intercept.Deny},
		{`{id: r, when: 'args.to.exists(x, x == "ceo@corp.com")', decision: deny}`, `{"to": [["ceo@corp.com"]]}`, intercept.Deny},
		// An allow rule with != must not allow the wrong type either.
		{`{id: r, when: 'args.mode != "delete"', decision: allow}`, `{"mode": ["delete"]}`, intercept.Deny},
		// What still holds: same types, numbers across int and double,
		// an explicit test for null, types compared as types.
		{`{id: r, when: 'args.force == true', decision: deny}`, `{"force": false}`, intercept.Allow},
		{`{id: r, when: 'args.force == true', decision: deny}`, `{"force": true}`, intercept.Deny},
		{`{id: r, when: 'args.amount == 1000', decision: deny}`, `{"amount": 1e3}`, intercept.Deny},
		{`{id: r, when: 'args.amount == 1000', decision: deny}`, `{"amount": 999.5}`, intercept.Allow},
		{`{id: r, when: 'args.amount in [1000, 2000]', decision: deny}`, `{"amount": 2e3}`, intercept.Deny},
		{`{id: r, when: 'args.currency in ["BTC", "ETH"]', decision: deny}`, `{"currency": "USD"}`, intercept.Allow},
		{`{id: r, when: 'args.cc == null', decision: deny}`, `{"cc": "a@corp.com"}`, intercept.Allow},
		{`{id: r, when: 'args.cc == null', decision: deny}`, `{"cc": null}`, intercept.Deny},
		{`{id: r, when: 'args.currency in [null, "BTC"]', decision: allow}`, `{"currency": null}`, intercept.Allow},
		{`{id: r, when: 'args.currency in [null, "BTC"]', decision: allow}`, `{"currency": "BTC"}`, intercept.Allow},
		{`{id: r, when: 'type(args.amount) == int', decision: deny}`, `{"amount": "5"}`, intercept.Allow},
		{`{id: r, when: '"to" in args', decision: deny}`, `{"to": 1}`, intercept.Deny},
		{`{id: r, when: 'args.to == ["a"]', decision: deny}`, `{"to": ["a"]}`, intercept.Deny},
		{`{id: r, when: 'args.mode != "delete"', decision: allow}`, `{"mode": "read"}`, intercept.Allow},
	} {
		def := "allow"
		if strings.Contains(tc.rule, "decision: allow") {
			def = "deny"
		}
		p := atkCompile(t, "default: "+def+"\nrules:\n  - "+tc.rule+"\n")
		d := call("t")
		d.Parameters = jsontext.Value(tc.args)
		if got, _ := p.Decide(context.Background(), d); got.Verdict != tc.want {
			t.Errorf("%s with %s: got %s/%s, want %s", tc.rule, tc.args, got.Verdict, got.Reason, tc.want)
		}
	}
}

// Names that differ only in case are refused when both are there; one
// alone is not, so a condition that tolerates a missing argument (has(),
// as the condition docs advise) does not hold for {"PATH": ...} while Go's
// encoding/json (mcp-go's BindArguments) reads it into the field path.
func TestAttackCaseVariantKeyAlone(t *testing.T) {
	p := atkCompile(t, `
default: allow
rules:
  - id: no-etc
    match: {match_tool: read_file}
    when: has(args.path) && args.path.startsWith("/etc/")
    decision: deny
  - id: no-force
    match: {match_tool: push}
    when: has(args.opts) && has(args.opts.force) && args.opts.force
    decision: deny
  - id: no-forced-deploys
    match: {match_tool: deploy}
    when: '"force" in args'
    decision: deny
  - id: no-etc-target
    match: {match_tool: move}
    when: args.exists(k, k == "targetDir") && args["targetDir"].startsWith("/etc/")
    decision: deny
  - id: principal-only
    match: {match_tool: whoami}
    when: principal.id == "root"
    decision: deny
`)
	for _, tc := range []struct {
		tool, args string
		want       intercept.Verdict
	}{
		{"read_file", `{"PATH": "/etc/shadow"}`, intercept.Deny},
		{"read_file", `{"Path": "/etc/shadow"}`, intercept.Deny},
		{"push", `{"opts": {"Force": true}}`, intercept.Deny},
		{"push", `{"opt\u017f": {"force": true}}`, intercept.Deny}, // ſ folds to s
		{"push", `{"Opts": {"force": true}}`, intercept.Deny},
		{"deploy", `{"FORCE": true}`, intercept.Deny},
		{"move", `{"targetdir": "/etc/cron.d"}`, intercept.Deny},
		// Still allowed: exact names, names the condition does not read.
		{"read_file", `{"path": "/tmp/x", "Mode": "r"}`, intercept.Allow},
		{"push", `{"opts": {"force": false}}`, intercept.Allow},
		{"deploy", `{"Path": "/srv"}`, intercept.Allow},
		{"move", `{"targetDir": "/srv"}`, intercept.Allow},
		// A variant only counts where the condition reads the name: an
		// environment map's PATH is not args.path, nor a nested FORCE
		// the "force" in args.
		{"read_file", `{"path": "/tmp/x", "env": {"PATH": "/usr/bin"}}`, intercept.Allow},
		{"deploy", `{"env": {"FORCE": "1"}}`, intercept.Allow},
		{"push", `{"opts": {"force": false}, "env": {"Opts": "x", "FORCE": "1"}}`, intercept.Allow},
		{"whoami", `{"ID": "root", "Method": "x"}`, intercept.Allow},
	} {
		var upstream struct {
			Path, TargetDir string
			Force           bool
			Opts            struct{ Force bool }
		}
		if err := json.Unmarshal([]byte(tc.args), &upstream); err != nil {
			t.Fatal(err)
		}
		d := call(tc.tool)
		d.Parameters = jsontext.Value(tc.args)
		if got, _ := p.Decide(context.Background(), d); got.Verdict != tc.want {
			t.Errorf("%s %s: got %s/%s, want %s (a Go upstream reads %+v)", tc.tool, tc.args, got.Verdict, got.Reason, tc.want, upstream)
		}
	}
}

// Arguments are one JSON value: a decoder error after it (a stray comma,
// a bracket) is data after the value too, not the end of the input, or
// `{"path": "/tmp"},{"path": "/etc/shadow"}` is decided on its first
// object while a reader that splits on the comma, or repairs the text,
// sees another.
func TestAttackArgsTrailingGarbage(t *testing.T) {
	p := atkCompile(t, `
default: deny
rules:
  - {id: tmp, when: 'args.path.startsWith("/tmp/")', decision: allow}
`)
	for _, raw := range []string{
		`{"path": "/tmp/x"},`,
		`{"path": "/tmp/x"},{"path": "/etc/shadow"}`,
		`{"path": "/tmp/x"}]`,
		`{"path": "/tmp/x"}}`,
	} {
		d := call("t")
		d.Parameters = jsontext.Value(raw)
		if got, _ := p.Decide(context.Background(), d); got.Verdict != intercept.Deny || got.Reason != intercept.ReasonPolicyError {
			t.Errorf("%s: got %s/%s, want deny/policy_error", raw, got.Verdict, got.Reason)
		}
	}
	d := call("t")
	d.Parameters = jsontext.Value("{\"path\": \"/tmp/x\"} \n")
	if got, _ := p.Decide(context.Background(), d); got.Verdict != intercept.Allow {
		t.Errorf("trailing white space: got %s/%s, want allow", got.Verdict, got.Reason)
	}
}

// Without auth the agent is the name its client gives. A manifest is the
// agent's whichever Unicode spelling of its name the client sends (NFC,
// TestAttackManifestAgentNFD), but route memory was keyed by the name as
// sent: the agent read a sensitive source as "jos\u00e9", then sent the
// sink as "jose\u0301", the same agent to its manifest, and to route
// memory one that had read nothing.
func TestAttackRouteMemoryAgentNFD(t *testing.T) {
	nfcName, nfd := "jos\u00e9", "jose\u0301"
	p := atkCompile(t, `
default: allow
tool_classes:
  read_secret: [source:sensitive]
  post: [sink:network]
manifests:
  "`+nfcName+`": {allowed_classes: [source:sensitive, sink:network]}
  "*": {allowed_classes: []}
route_rules:
  - {id: no-exfil, after: {match_any_class: [source:sensitive]}, deny: {match_any_class: [sink:network]}, scope: agent}
`)
	ctx := context.Background()
	read := call("read_secret")
	read.Agent, read.SessionID = nfcName, "s1"
	dec, _ := p.Decide(ctx, read)
	if dec.Verdict != intercept.Allow {
		t.Fatalf("the sensitive read: %s/%s, want allow", dec.Verdict, dec.Reason)
	}
	if err := p.Forwarded(ctx, read, dec); err != nil {
		t.Fatal(err)
	}
	for _, agent := range []string{nfcName, nfd} {
		sink := call("post")
		sink.Agent, sink.SessionID = agent, "s2"
		if got, _ := p.Decide(ctx, sink); got.Verdict == intercept.Allow {
			t.Errorf("agent %+q: the sink after %+q's sensitive read was allowed; the same agent to its manifest", agent, nfcName)
		}
	}
}
