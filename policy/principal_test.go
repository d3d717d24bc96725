package policy

import (
	"context"
	"testing"

	"github.com/sluicehq/sluice/intercept"
)

// Conditions see the authenticated principal: its id, method and claims.
// Without one, principal.id and principal.method are "" and claims is
// empty, so a condition on them is false, not an error.
func TestConditionPrincipal(t *testing.T) {
	p := mustCompile(t, `
rules:
  - id: jwt-finance
    match: {match_tool: pay}
    when: >
      principal.method == "jwt" && principal.id == "svc-billing" &&
      "payments:write" in principal.claims.scope.split(" ") && principal.claims.azp == "billing-app"
    decision: allow
`)
	tests := []struct {
		name string
		p    *intercept.Principal
		want intercept.Verdict
	}{
		{"no principal", nil, intercept.Deny},
		{"jwt with scope", &intercept.Principal{ID: "svc-billing", Method: "jwt",
			Claims: map[string]any{"scope": "openid payments:write", "azp": "billing-app"}}, intercept.Allow},
		{"jwt without scope", &intercept.Principal{ID: "svc-billing", Method: "jwt",
			Claims: map[string]any{"scope": "openid", "azp": "billing-app"}}, intercept.Deny},
		{"api key of the same name", &intercept.Principal{ID: "svc-billing", Method: "api_key"}, intercept.Deny},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := call("pay")
			d.Principal = tt.p
			got := intercept.Decide(context.Background(), p, d)
			if got.Verdict != tt.want {
				t.Errorf("got %s/%s, want %s", got.Verdict, got.Reason, tt.want)
			}
			if tt.p == nil && got.Reason != ReasonDefaultDeny {
				t.Errorf("no principal: got reason %s, want %s (a false condition, not policy_error)", got.Reason, ReasonDefaultDeny)
			}
		})
	}
}
