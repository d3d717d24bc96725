package policy

import (
	"context"
	"strings"
	"testing"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/sluicehq/sluice/intercept"
	"github.com/sluicehq/sluice/internal/costratio"
)

// CEL charges matches by the pattern's length, a guess of four characters
// an expression, and only once the match has run; RE2 in Go takes the
// string's length times the regex's program, which a counted repetition
// makes a thousand times the pattern. A rule refusing a long base64 blob,
// [a-z0-9+/]{1000,}, was charged 8,000 of its 100,000 for 16 KiB of text
// while the match ran 16 million steps, and the call was allowed; an
// agent's 4 MiB argument against a{1,1000}b took 78 s of CPU before the
// cost limit denied it. A match is now charged by the regex's program
// size, before it runs: a condition it takes past the cost limit fails
// (policy_error) without running it.
func TestAttackRegexChargedByProgram(t *testing.T) {
	blob := atkCompile(t, `
default: allow
rules:
  - {id: no-blobs, match: {match_tool: post}, when: 'args.body.matches("(?i)[a-z0-9+/]{1000,}")', decision: deny}
`)
	plain := atkCompile(t, `
default: allow
rules:
  - {id: no-secrets, match: {match_tool: post}, when: 'args.body.contains("BEGIN RSA PRIVATE KEY")', decision: deny}
`)
	// Runs of 999 letters, one short of a blob: RE2 keeps a thread for
	// each position of the repetition it may be at.
	body := `{"body":"` + strings.Repeat(strings.Repeat("A", 999)+" ", 16) + `"}`
	decide := func(p *Policy) func() intercept.Decision {
		d := call("post")
		d.Parameters = jsontext.Value(body)
		return func() intercept.Decision { got, _ := p.Decide(context.Background(), d); return got }
	}
	if got := decide(blob)(); got.Verdict != intercept.Deny || got.Reason != intercept.ReasonPolicyError {
		t.Errorf("16 KiB against a regex of 1,003 instructions: %s/%s, want deny/%s (the cost limit)", got.Verdict, got.Reason, intercept.ReasonPolicyError)
	}
	ratio, regex, base := costratio.Of(func() { decide(blob)() }, func() { decide(plain)() })
	t.Logf("regex: %v; contains: %v; ratio %.1f", regex, base, ratio)
	if ratio > 20 {
		t.Errorf("the regex took %v to decide, %.0f times the %v of contains: it ran before its cost was counted", regex, ratio, base)
	}

	// Ordinary patterns cost what they did: a condition CEL allowed on
	// such input still runs and decides.
	for _, c := range []struct {
		when, args string
		want       intercept.Verdict
	}{
		{`args.body.matches("(?i)BEGIN RSA PRIVATE KEY")`, body, intercept.Allow},
		{`args.body.matches("(?i)BEGIN RSA PRIVATE KEY")`, `{"body":"x -----begin rsa private key----- y"}`, intercept.Deny},
		{`args.to.matches("^[^@]{1,64}@evil\\.test$")`, `{"to":"ceo@evil.test"}`, intercept.Deny},
		{`args.to.matches("^[^@]{1,64}@evil\\.test$")`, `{"to":"ceo@good.test"}`, intercept.Allow},
		{`args.body.matches("(?i)[a-z0-9+/]{1000,}")`, `{"body":"` + strings.Repeat("A", 1000) + `"}`, intercept.Deny},
		{`args.body.matches("(?i)[a-z0-9+/]{1000,}")`, `{"body":"short"}`, intercept.Allow},
		{`args.body.matches(args.re)`, `{"body":"abc","re":"b"}`, intercept.Deny},
		{`args.body.matches(args.re)`, `{"body":"abc","re":"("}`, intercept.Deny}, // not a regex: policy_error
		{`args.body.matches(args.re)`, `{"body":"` + strings.Repeat("a", 64<<10) + `","re":"a{1,1000}b"}`, intercept.Deny},
		{`matches(args.body, "b")`, `{"body":"abc"}`, intercept.Deny},
		// Each match of a comprehension counts toward the one limit.
		{`args.items.exists(i, i.matches("(?i)[a-z0-9+/]{1000,}"))`, `{"items":["` + strings.Repeat(strings.Repeat("A", 999)+`","`, 20) + `"]}`, intercept.Deny},
		{`args.items.exists(i, i.matches("(?i)[a-z0-9+/]{1000,}"))`, `{"items":["` + strings.Repeat("A", 999) + `"]}`, intercept.Allow},
		{`args.body.matches("b")`, `{"body":5}`, intercept.Deny}, // not a string: policy_error
		{`args.a.matches("x") || args.b == 1`, `{"a":"y","b":1}`, intercept.Deny},
	} {
		p := atkCompile(t, "default: allow\nrules:\n  - {id: r, match: {match_tool: post}, when: '"+c.when+"', decision: deny}\n")
		d := call("post")
		d.Parameters = jsontext.Value(c.args)
		if got, _ := p.Decide(context.Background(), d); got.Verdict != c.want {
			t.Errorf("%s on %.60s: got %s/%s, want %s", c.when, c.args, got.Verdict, got.Reason, c.want)
		}
	}
}
