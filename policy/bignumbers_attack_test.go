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
