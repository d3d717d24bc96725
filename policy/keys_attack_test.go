package policy

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/sluicehq/sluice/intercept"
)

// A condition that finds a member by testing the keys of an object it
// iterates (args.exists(k, k == "targetDir" && ...)) reads no literal
// name, so {"TargetDir": ...} neither matched the rule nor tripped the
// case check, while Go's encoding/json reads it into the field targetDir.
// Keys a comprehension tests are refused in another case, where the
// condition iterates them.
func TestAttackCaseVariantKeyComprehension(t *testing.T) {
	p := atkCompile(t, `
default: allow
rules:
  - {id: eq, match: {match_tool: move}, when: 'args.exists(k, k == "targetDir" && args[k].startsWith("/etc/"))', decision: deny}
  - {id: all, match: {match_tool: push}, when: '!args.all(k, k != "force")', decision: deny}
  - {id: filter, match: {match_tool: wipe}, when: 'args.filter(k, k in ["force", "recursive"]).size() > 0', decision: deny}
  - {id: one, match: {match_tool: drop}, when: 'args.exists_one(k, "cascade" == k)', decision: deny}
  - {id: prefix, match: {match_tool: store}, when: 'args.exists(k, k.startsWith("secret"))', decision: deny}
  - {id: suffix, match: {match_tool: call_api}, when: 'args.exists(k, k.endsWith("Token"))', decision: deny}
  - {id: contains, match: {match_tool: login}, when: 'args.exists(k, k.contains("pass"))', decision: deny}
  - {id: regex, match: {match_tool: auth}, when: 'args.exists(k, k.matches("^pwd[0-9]*$"))', decision: deny}
  - {id: nested, match: {match_tool: deploy}, when: 'has(args.opts) && args.opts.exists(k, k == "force")', decision: deny}
  - {id: names, match: {match_tool: copy}, when: '["targetDir", "dest"].exists(n, n in args && args[n].startsWith("/etc/"))', decision: deny}
  - {id: other-use, match: {match_tool: sync}, when: 'args.exists(k, k.substring(0, 1) == "x" || k.size() > 3 && k.substring(0, 4) == "drop")', decision: deny}
  - {id: mapped, match: {match_tool: merge}, when: 'args.map(k, k).exists(x, x == "squash")', decision: deny}
  - {id: folded, match: {match_tool: open}, when: 'args.exists(k, k.lowerAscii() == "key")', decision: deny}
`)
	for _, tc := range []struct {
		tool, args string
		want       intercept.Verdict
	}{
		{"move", `{"TargetDir": "/etc/cron.d"}`, intercept.Deny},
		{"move", `{"targetdir": "/etc/cron.d"}`, intercept.Deny},
		{"push", `{"Force": true}`, intercept.Deny},
		{"wipe", `{"RECURSIVE": true}`, intercept.Deny},
		{"drop", `{"Cascade": true}`, intercept.Deny},
		{"store", `{"SecretKey": "x"}`, intercept.Deny},
		{"call_api", `{"apiTOKEN": "x"}`, intercept.Deny},
		{"login", `{"userPass": "x"}`, intercept.Deny},
		{"auth", `{"PWD1": "x"}`, intercept.Deny},
		{"deploy", `{"opts": {"Force": true}}`, intercept.Deny},
		{"copy", `{"TargetDir": "/etc/cron.d"}`, intercept.Deny},
		{"copy", `{"DEST": "/etc/cron.d"}`, intercept.Deny},
		{"sync", `{"DropAll": true}`, intercept.Deny},
		{"merge", `{"Squash": true}`, intercept.Deny},
		{"open", `{"\u212Aey": "x"}`, intercept.Deny}, // KELVIN SIGN ey: Go reads it as key
		// What the rules are about is still denied.
		{"move", `{"targetDir": "/etc/cron.d"}`, intercept.Deny},
		{"store", `{"secretKey": "x"}`, intercept.Deny},
		{"open", `{"KEY": "x"}`, intercept.Deny},
		// Legitimate calls pass: exact names, keys the tests cannot take
		// for another, case variants in objects the condition does not
		// iterate.
		{"move", `{"targetDir": "/srv/x", "Mode": "r"}`, intercept.Allow},
		{"push", `{"forced": true, "Branch": "main"}`, intercept.Allow},
		{"store", `{"mySecret": "x", "topSecretNote": 1}`, intercept.Allow},
		{"call_api", `{"tokens": 3}`, intercept.Allow},
		{"login", `{"user": "x", "hint": "y"}`, intercept.Allow},
		{"auth", `{"pwdHint": "x"}`, intercept.Allow},
		{"deploy", `{"opts": {"dryRun": true}, "env": {"FORCE": "1"}}`, intercept.Allow},
		{"copy", `{"targetDir": "/srv", "Source": "/etc/x"}`, intercept.Allow},
		{"sync", `{"path": "/srv", "delay": 1}`, intercept.Allow},
		{"merge", `{"branch": "main"}`, intercept.Allow},
		{"open", `{"path": "/srv", "Mode": "r"}`, intercept.Allow},
	} {
		d := call(tc.tool)
		d.Parameters = jsontext.Value(tc.args)
		if got, _ := p.Decide(context.Background(), d); got.Verdict != tc.want {
			t.Errorf("%s %s: got %s/%s (rule %q), want %s", tc.tool, tc.args, got.Verdict, got.Reason, got.RuleID, tc.want)
		}
	}
	// The premise: Go's encoding/json reads these names into the fields.
	var up struct {
		TargetDir string
		Key       string
	}
	if err := json.Unmarshal([]byte(`{"TargetDir": "/etc/cron.d", "\u212Aey": "x"}`), &up); err != nil || up.TargetDir != "/etc/cron.d" || up.Key != "x" {
		t.Fatalf("premise: encoding/json read %+v, %v", up, err)
	}
}
