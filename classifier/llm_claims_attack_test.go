package classifier

import (
	"context"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/intercept"
)

// (Found by an attacker review.) TestAttackClaimsSentToClassifier: the
// provider is a third party, and an agent's JWT claims say nothing of what
// a call does: who the person behind the token is (email, name), what its
// issuer adds (a tenant's token). The audit record keeps none of them, yet
// every claim went to the provider in each call's descriptor.
func TestAttackClaimsSentToClassifier(t *testing.T) {
	f := newFakeLLM(t, ProviderAnthropic)
	_, o := f.serve()
	l := mustLLM(t, o)
	d := llmDescriptor("s")
	d.Principal = &intercept.Principal{ID: "taxbot", Method: "jwt", Claims: map[string]any{
		"sub": "taxbot", "email": "alice.private@corp.example", "name": "Alice Private",
		"tenant_token": "TENANT-TOKEN-4242",
	}}
	if _, err := l.Classify(context.Background(), d); err != nil {
		t.Fatal(err)
	}
	user := *f.lastUser.Load()
	for _, s := range []string{"alice.private@corp.example", "Alice Private", "TENANT-TOKEN-4242"} {
		if strings.Contains(user, s) {
			t.Errorf("sent to the LLM provider: %s", s)
		}
	}
	if !strings.Contains(user, `"taxbot"`) {
		t.Errorf("the agent is not named in %s", user)
	}
}
