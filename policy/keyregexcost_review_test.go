package policy

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/sluicehq/sluice/intercept"
	"github.com/sluicehq/sluice/internal/costratio"
)

// TestAttackKeyRegexChargedByProgram: a condition testing the keys of the
// arguments with matches (args.exists(k, k.matches(...))) has each key
// checked first for passing only by its case, running the regex twice
// (as written and without regard to case) outside CEL's cost limit: a
// 16 KiB key against a rule refusing long base64 runs took 150 ms, 4 MiB
// (max_body_bytes) about 40 s of CPU for each call, where the same text
// as a value is charged by the regex's program and refused at once. The
// check is charged to the condition's cost limit too.
func TestAttackKeyRegexChargedByProgram(t *testing.T) {
	blob := atkCompile(t, `
default: allow
rules:
  - {id: no-blob-keys, match: {match_tool: post}, when: 'args.exists(k, k.matches("(?i)[a-z0-9+/]{1000,}"))', decision: deny}
`)
	plain := atkCompile(t, `
default: allow
rules:
  - {id: no-secret-keys, match: {match_tool: post}, when: 'args.exists(k, k.contains("BEGIN RSA PRIVATE KEY"))', decision: deny}
`)
	body := `{"` + strings.Repeat(strings.Repeat("A", 999)+" ", 16) + `":1}`
	decide := func(p *Policy) func() intercept.Decision {
		d := call("post")
		d.Parameters = jsontext.Value(body)
		return func() intercept.Decision { got, _ := p.Decide(context.Background(), d); return got }
	}
	if got := decide(blob)(); got.Verdict != intercept.Deny || got.Reason != intercept.ReasonPolicyError {
		t.Errorf("a 16 KiB key against a regex of 1,003 instructions: %s/%s, want deny/%s (the cost limit)", got.Verdict, got.Reason, intercept.ReasonPolicyError)
	}
	ratio, regex, base := costratio.Of(func() { decide(blob)() }, func() { decide(plain)() })
	t.Logf("regex: %v; contains: %v; ratio %.1f", regex, base, ratio)
	if ratio > 20 {
		t.Errorf("the key regex took %v to decide, %.0f times the %v of contains: it ran before its cost was counted", regex, ratio, base)
	}

	// Keys an ordinary pattern is tested on are decided as before.
	for _, c := range []struct {
		when, args string
		want       intercept.Verdict
		reason     string
	}{
		{`args.exists(k, k.matches("(?i)[a-z0-9+/]{1000,}"))`, `{"` + strings.Repeat("A", 1000) + `":1}`, intercept.Deny, "rule_deny"},
		{`args.exists(k, k.matches("(?i)[a-z0-9+/]{1000,}"))`, `{"short":1}`, intercept.Allow, ""},
		{`args.exists(k, k.matches("^secret"))`, `{"secret_key":1}`, intercept.Deny, "rule_deny"},
		{`args.exists(k, k.matches("^secret"))`, `{"SECRET_KEY":1}`, intercept.Deny, intercept.ReasonPolicyError}, // passes only by its case
		{`args.exists(k, k.matches("^secret"))`, `{"token":1,"other":2}`, intercept.Allow, ""},
		{`args.exists(k, k.matches("^secret"))`, manyKeys(2000), intercept.Allow, ""},
	} {
		p := atkCompile(t, "default: allow\nrules:\n  - {id: r, match: {match_tool: post}, when: '"+c.when+"', decision: deny}\n")
		d := call("post")
		d.Parameters = jsontext.Value(c.args)
		got, _ := p.Decide(context.Background(), d)
		if got.Verdict != c.want || (c.reason != "" && got.Reason != c.reason) {
			t.Errorf("%s on %.60s: got %s/%s, want %s/%s", c.when, c.args, got.Verdict, got.Reason, c.want, c.reason)
		}
	}
}

// manyKeys is an object of n keys of 20 bytes.
func manyKeys(n int) string {
	var b strings.Builder
	b.WriteString("{")
	for i := range n {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `"key_%015d":1`, i)
	}
	b.WriteString("}")
	return b.String()
}
