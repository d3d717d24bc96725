package intercept

import (
	"context"
	"strconv"
	"testing"

	"github.com/go-json-experiment/json/jsontext"
)

// TestAttackListedFloodForgetsOthers (attacker review): what an upstream
// listed to each client (resources, prompts, and that it listed the tools)
// was one LRU of 100,000 items for every client. One principal opening
// sessions that each list the tools (or reading an upstream that lists a
// URI per note it made) pushed every other principal's listed items out:
// their reads of a listed resource were then decided as carrying, denied
// once a route rule closes the upstream, and their calls listed for again.
// One principal now holds a tenth of the table, its own oldest forgotten.
func TestAttackListedFloodForgetsOthers(t *testing.T) {
	ctx := context.Background()
	i := &Interceptor{Observer: hashingObserver{}}
	alice := CallContext{Upstream: "web", Principal: &Principal{ID: "alice"}, SessionID: "sa"}
	i.ObserveListed(ctx, alice, "resources/list", jsontext.Value(`{"resources":[{"uri":"https://web.example/report"}]}`))
	i.ObserveListed(ctx, alice, "tools/list", jsontext.Value(`{"tools":[]}`))
	msgs, _, err := Decode([]byte(`{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":"https://web.example/report"}}`))
	if err != nil {
		t.Fatal(err)
	}
	if !i.wasListed(ctx, alice, msgs[0]) {
		t.Fatal("alice's listed resource is not listed")
	}
	for n := range maxListed + 10 {
		mallory := CallContext{Upstream: "web", Principal: &Principal{ID: "mallory"}, SessionID: "m" + strconv.Itoa(n)}
		i.ObserveListed(ctx, mallory, "tools/list", jsontext.Value(`{"tools":[]}`))
	}
	if !i.wasListed(ctx, alice, msgs[0]) {
		t.Error("one principal's listings pushed out the resource another was listed")
	}
	if !i.listedHas(toolsListedKey(ctx, alice)) {
		t.Error("one principal's listings pushed out another's tools listing")
	}
	// Mallory's latest are still known: the share forgets its oldest.
	last := CallContext{Upstream: "web", Principal: &Principal{ID: "mallory"}, SessionID: "m" + strconv.Itoa(maxListed+9)}
	if !i.listedHas(toolsListedKey(ctx, last)) {
		t.Error("the flooding principal's latest listing was forgotten")
	}
}

// TestAttackUnnamedListedFloodForgetsOthers (attacker review): the share
// of the listed table was a principal's, else an agent's, and a client
// that names no agent (no agent header, an initialize without a client
// name, as the gateway accepts) had none: opening sessions that each list
// the tools, and ending them, it pushed every principal's listed items
// out as the share was there to prevent. The unnamed clients hold a
// tenth together.
func TestAttackUnnamedListedFloodForgetsOthers(t *testing.T) {
	ctx := context.Background()
	i := &Interceptor{Observer: hashingObserver{}}
	alice := CallContext{Upstream: "web", Principal: &Principal{ID: "alice"}, SessionID: "sa"}
	i.ObserveListed(ctx, alice, "resources/list", jsontext.Value(`{"resources":[{"uri":"https://web.example/report"}]}`))
	msgs, _, err := Decode([]byte(`{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":"https://web.example/report"}}`))
	if err != nil {
		t.Fatal(err)
	}
	for n := range maxListed + 10 {
		unnamed := CallContext{Upstream: "web", SessionID: "m" + strconv.Itoa(n)}
		i.ObserveListed(ctx, unnamed, "tools/list", jsontext.Value(`{"tools":[]}`))
	}
	if !i.wasListed(ctx, alice, msgs[0]) {
		t.Error("an unnamed client's listings pushed out the resource a principal was listed")
	}
	if last := (CallContext{Upstream: "web", SessionID: "m" + strconv.Itoa(maxListed+9)}); !i.listedHas(toolsListedKey(ctx, last)) {
		t.Error("the unnamed client's latest listing was forgotten")
	}
}
