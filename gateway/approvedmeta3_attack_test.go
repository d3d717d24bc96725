package gateway

import (
	"strings"
	"testing"
)

// TestAttackApprovedCallClientMeta (attacker review): CallExtra left the
// three io.modelcontextprotocol/ members a 2026-07-28 request carries
// (protocolVersion, clientInfo, clientCapabilities) out of an approval's
// binding whatever they held. They are the client's to fill: the approved
// add{a:2,b:3} went again with data of the agent's choosing as its
// protocol version, client name or an experimental capability, and reached
// the upstream under the approval. The approval binds them now (the
// approved call itself still goes).
func TestAttackApprovedCallClientMeta(t *testing.T) {
	for name, meta := range map[string]string{
		"protocolVersion":    `{"io.modelcontextprotocol/protocolVersion":"SECRET-META"}`,
		"clientInfo":         `{"io.modelcontextprotocol/clientInfo":{"name":"raw","version":"1","websiteUrl":"https://SECRET-META.example"}}`,
		"clientInfo.version": `{"io.modelcontextprotocol/clientInfo":{"name":"raw","version":"SECRET-META"}}`,
		"clientCapabilities": `{"io.modelcontextprotocol/clientCapabilities":{"experimental":{"SECRET-META":{}}}}`,
	} {
		t.Run(name, func(t *testing.T) {
			f, store := approvalFixture(t, Options{}, true)
			url := f.gw.URL + "/mcp/demo"
			hdr := initializeWith(t, url, `{}`)
			if _, _, body := post(t, url, hdr, addCall); !strings.Contains(body, "approval_required") {
				t.Fatalf("not held: %s", body)
			}
			if _, err := store.Decide(onlyRequest(t, store).ID, true, "operator"); err != nil {
				t.Fatal(err)
			}
			swapped := `{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"add","arguments":{"a":2,"b":3},"_meta":` + meta + `}}`
			_, _, body := post(t, url, hdr, swapped)
			if f.upstreamSaw("SECRET-") {
				t.Errorf("a call other than the approved one reached the upstream under its approval: %s", body)
			}
			if _, _, body := post(t, url, hdr, addCall); !strings.Contains(body, `"text":"5"`) {
				t.Errorf("the approved call: %s", body)
			}
		})
	}
}
