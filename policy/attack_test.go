package policy

import (
	"context"
	"encoding/json"
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
