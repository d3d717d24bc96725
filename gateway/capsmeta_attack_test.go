package gateway

import (
	"strings"
	"testing"
)

// TestAttackCapabilitySetMetaInSession: a client in a session (a
// 2025-11-25 initialize, over HTTP or /ws) whose tools/list carries
// 2026-07-28 capabilities in its _meta is listed by its server what its
// initialize declared: the _meta is not the session's. The gateway took
// the _meta's for the list's capability set, so a client declaring
// roots at initialize and elicitation in _meta had elicitation's set
// pinned with the tools listed to roots: a client really declaring
// elicitation then had ask denied inventory_drift, as new under a
// pinned set, for everyone.
func TestAttackCapabilitySetMetaInSession(t *testing.T) {
	eachCapsPath(t, []capsClient{
		{"session", capsSession},
		{"ws", capsWS},
	}, func(t *testing.T, open func(caps string) func(method, name, params string) string) {
		liar := open(`{"roots":{}}`)
		if body := liar("tools/list", "", `{"_meta":{"io.modelcontextprotocol/clientCapabilities":{"elicitation":{}}}}`); strings.Contains(body, `"ask"`) {
			t.Fatalf("the server listed ask to a session that declared roots: %s", body)
		}
		elicit := open(`{"elicitation":{}}`)
		if body := elicit("tools/list", "", `{}`); !strings.Contains(body, `"ask"`) {
			t.Errorf("tools/list of a client declaring elicitation: got %s, want ask", body)
		}
		if body := elicit("tools/call", "ask", `{"name":"ask","arguments":{}}`); !strings.Contains(body, "ran ask") {
			t.Errorf("call of ask: got %s, want it run", body)
		}
	})
}

// TestCapabilitySetOfAdoptedSessionLargeCaps: a session whose client
// declares more than a sealed id carries (an experimental member of 600
// bytes) keeps, on another replica, the capabilities its capability set
// is made of. It kept none, and its lists there counted as declaring
// none: ask, listed to it for its elicitation, was drift under the set of
// none, and then denied for everyone.
func TestCapabilitySetOfAdoptedSessionLargeCaps(t *testing.T) {
	adoptedSessionListsAsk(t, `{"experimental":{"big":"`+strings.Repeat("x", 600)+`"},"elicitation":{}}`)
}
