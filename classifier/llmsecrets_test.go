package classifier

import (
	"context"
	"strings"
	"testing"

	"github.com/go-json-experiment/json/jsontext"
)

// What the LLM provider is sent: the call's arguments and the upstream's
// URL as they are, with the agent's password and the operator's upstream
// key in them.
func TestLLMSentSecrets(t *testing.T) {
	f := newFakeLLM(t, ProviderOpenAI)
	_, o := f.serve()
	l := mustLLM(t, o)
	d := llmDescriptor("s")
	d.Parameters = jsontext.Value(`{"invoice_id":"INV-1","password":"hunter2-agent-pw","headers":{"Authorization":"Bearer eyJagentbearer0123456789"}}`)
	d.TargetEndpoint = "https://svc:UPSTREAM-PW-77@finance.acme.internal/api?api_key=UPSTREAM-KEY-99"
	if _, err := l.Classify(context.Background(), d); err != nil {
		t.Fatal(err)
	}
	user := *f.lastUser.Load()
	for _, s := range []string{"hunter2-agent-pw", "eyJagentbearer0123456789", "UPSTREAM-PW-77", "UPSTREAM-KEY-99"} {
		if strings.Contains(user, s) {
			t.Errorf("sent to the LLM provider: %s", s)
		}
	}
	if t.Failed() {
		t.Logf("user message: %.400s", user)
	}
}
