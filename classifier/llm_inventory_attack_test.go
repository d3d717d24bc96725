package classifier

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/sony/gobreaker/v2"
)

// (Found by an attacker review.) TestAttackUpstreamToolsCrowdOutClassifier:
// every upstream's tool list goes into the system prompt of every
// classification. One upstream listing 2,000 tools (the inventory takes
// 10,000) of 300-byte descriptions made a 700 KB system prompt, past the
// model's context window: every call of every agent to every upstream was
// refused, five refusals opened the breaker, and all got the fallback
// verdict (composite 0: escalated, or held).
func TestAttackUpstreamToolsCrowdOutClassifier(t *testing.T) {
	f := newFakeLLM(t, ProviderOpenAI)
	srv := httptest.NewServer(contextLimited{f: f, limit: 512 << 10})
	t.Cleanup(srv.Close)
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	var tools []InventoryTool
	for i := range 2000 {
		tools = append(tools, InventoryTool{Upstream: "many-tools", Name: fmt.Sprintf("tool_%d", i), Description: strings.Repeat("d", 300)})
	}
	tools = append(tools, InventoryTool{Upstream: "finance", Name: "read_invoice", Description: "Reads one invoice."})
	l := mustLLM(t, LLMOptions{Provider: ProviderOpenAI, BaseURL: srv.URL, APIKey: f.key, HTTPClient: &http.Client{Transport: tr},
		Inventory: func() InventorySnapshot { return InventorySnapshot{Hash: "h", Tools: tools} }})
	for i := range 6 {
		d := llmDescriptor("alice-session")
		d.Parameters = jsontext.Value(fmt.Sprintf(`{"invoice_id":"INV-%d"}`, i)) // no cache hits
		v, err := l.Classify(context.Background(), d)
		if err != nil || v.Axes.Get(AxisActionType).Source == SourceLLMFallback {
			t.Fatalf("call %d: got the fallback verdict (composite %.2f), err %v", i, v.CompositeConfidence, err)
		}
	}
	if st := l.BreakerState(); st != gobreaker.StateClosed {
		t.Errorf("breaker %v", st)
	}
	sys := *f.lastSys.Load()
	if !strings.Contains(sys, `"read_invoice"`) {
		t.Errorf("the system prompt does not list the called upstream's tool read_invoice")
	}
	if !strings.Contains(sys, "more tools, not listed") {
		t.Errorf("the system prompt does not say tools were left out")
	}
}
