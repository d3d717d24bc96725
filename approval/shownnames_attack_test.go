package approval

import (
	"strings"
	"testing"

	"github.com/go-json-experiment/json/jsontext"
)

// TestAttackShownHidesWhatIsApproved (review): the approvals list
// redacted a held call's arguments as the audit log did, and with them
// what names a credential rather than holds it: the variable an agent
// sets through a name/value pair ({"key": "LD_PRELOAD", "value": …},
// as n8n's and Coolify's tools take it), the secret a call deletes
// (Infisical's secretName, a Vault key path). The approver was asked to
// approve a call without seeing what it changes. Now such names are
// shown; the credentials themselves still are not.
func TestAttackShownHidesWhatIsApproved(t *testing.T) {
	s := NewStore(Options{})
	for _, c := range []struct{ args, shown, hidden string }{
		{`{"key":"LD_PRELOAD","value":"/tmp/evil.so"}`, "LD_PRELOAD", ""},
		{`{"key":"API_TOKEN","value":"tok-0123456789"}`, "API_TOKEN", "tok-0123456789"},
		{`{"secretName":"PROD_DB_PASSWORD","secretValue":"hunter2"}`, "PROD_DB_PASSWORD", "hunter2"},
		{`{"secret_path":"secret/data/prod","ssh_key_file":"/home/a/.ssh/id_ed25519","password":"hunter2"}`, "secret/data/prod", "hunter2"},
	} {
		got := string(s.Shown(Request{Arguments: jsontext.Value(c.args)}).Arguments)
		if !strings.Contains(got, c.shown) {
			t.Errorf("%s shown as %s: the approver does not see %q", c.args, got, c.shown)
		}
		if c.hidden != "" && strings.Contains(got, c.hidden) {
			t.Errorf("%s shown as %s: the secret %q is shown", c.args, got, c.hidden)
		}
	}
}
