package policy

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/sluicehq/sluice/intercept"
)

// Integers above int64 were decoded as float64, which rounds them: a deny
// rule on one account number (a uint literal, the only way CEL writes
// it) never matched the call naming that very account, since
// 12345678901234567890 arrived as 12345678901234567168.0, while a Go
// upstream with a uint64 field read 12345678901234567890 and paid it.
func TestAttackBigIntegerArguments(t *testing.T) {
	const blocked = `{"to_account":12345678901234567890,"amount":5}`
	var up struct {
		ToAccount uint64 `json:"to_account"`
	}
	if err := json.Unmarshal([]byte(blocked), &up); err != nil || up.ToAccount != 12345678901234567890 {
		t.Fatalf("premise: a Go upstream reads %d (%v)", up.ToAccount, err)
	}
	for _, c := range []struct {
		when, args string
		want       intercept.Verdict
	}{
		{`args.to_account == 12345678901234567890u`, blocked, intercept.Deny},
		{`args.to_account in [12345678901234567890u]`, blocked, intercept.Deny},
		{`string(args.to_account) == "12345678901234567890"`, blocked, intercept.Deny},
		{`args.to_account == 12345678901234567890u`, `{"to_account":12345678901234567891}`, intercept.Allow},
		{`args.to_account > 1000`, `{"to_account":18446744073709551615}`, intercept.Deny},
		// Beyond uint64 a number is a double still, and compares as one.
		{`args.to_account > 1000`, `{"to_account":18446744073709551616}`, intercept.Deny},
		{`args.to_account == 5`, `{"to_account":5}`, intercept.Deny},
	} {
		p := atkCompile(t, `
default: allow
rules:
  - {id: r, match: {match_tool: pay}, when: '`+c.when+`', decision: deny}
`)
		d := call("pay")
		d.Parameters = jsontext.Value(c.args)
		if got, _ := p.Decide(context.Background(), d); got.Verdict != c.want {
			t.Errorf("when %s, args %s: got %s/%s, want %s", c.when, c.args, got.Verdict, got.Reason, c.want)
		}
	}
}

// The way cond.go gives to tolerate a value of another type in a deny
// rule must still deny every number above the bound: 5000.5 and
// 10000000000000000000 are a double and a uint, not ints.
func TestAttackToleratingConditionNumbers(t *testing.T) {
	p := atkCompile(t, `
default: allow
rules:
  - {id: r, match: {match_tool: pay}, when: 'has(args.amount) && type(args.amount) in [int, uint, double] && args.amount > 1000', decision: deny}
`)
	for _, c := range []struct {
		args string
		want intercept.Verdict
	}{
		{`{"amount":5000}`, intercept.Deny},
		{`{"amount":5000.5}`, intercept.Deny},
		{`{"amount":10000000000000000000}`, intercept.Deny},
		{`{"amount":1e300}`, intercept.Deny},
		{`{"amount":5}`, intercept.Allow},
		{`{"amount":"5000"}`, intercept.Allow}, // tolerated: the condition says so
		{`{}`, intercept.Allow},
	} {
		d := call("pay")
		d.Parameters = jsontext.Value(c.args)
		if got, _ := p.Decide(context.Background(), d); got.Verdict != c.want {
			t.Errorf("%s: got %s/%s, want %s", c.args, got.Verdict, got.Reason, c.want)
		}
	}
}
