package console

import (
	"context"
	"html"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/approval"
	"github.com/sluicehq/sluice/intercept"
)

// TestAttackConsoleHeldCallSecrets: with audit.keep_arguments, the
// Approvals page shows a held call's arguments and what else it sends as
// the audit log keeps them: a password, a key named in secret_keys and
// an API key in _meta redacted, the rest as sent. Before, the page
// showed every secret of every held call.
func TestAttackConsoleHeldCallSecrets(t *testing.T) {
	st, err := approval.OpenStore(filepath.Join(t.TempDir(), approval.FileName), approval.Options{SecretKeys: []string{"pin"}})
	if err != nil {
		t.Fatal(err)
	}
	ic := &intercept.Interceptor{Decider: &approval.Gate{Store: st, Next: intercept.DeciderFunc(
		func(context.Context, *intercept.ActionDescriptor) (intercept.Decision, error) {
			return intercept.Decision{Verdict: intercept.RequireApproval, Reason: "rule", RuleID: "hold"}, nil
		})}}
	m, err := intercept.DecodeMessage([]byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"login",` +
		`"arguments":{"user":"alice","password":"hunter2","pin":"4242"},"_meta":{"api_key":"sk-live-0123456789abcdefghij"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	if _, forward := ic.Check(context.Background(), m, intercept.CallContext{Upstream: "bank", Agent: "agent-a"}); forward {
		t.Fatal("the call was forwarded, want it held")
	}
	_, cl, base := reviewConsole(t, Deps{Approvals: st, KeepArguments: true})
	page := html.UnescapeString(reviewGet(t, cl, base+"/approvals"))
	for _, secret := range []string{"hunter2", "4242", "sk-live-0123456789abcdefghij"} {
		if strings.Contains(page, secret) {
			t.Errorf("the Approvals page shows the secret %q", secret)
		}
	}
	if !strings.Contains(page, "[REDACTED]") || !strings.Contains(page, "alice") {
		t.Errorf("the Approvals page:\n%s\nwant the call shown, its secrets redacted", page)
	}
}
