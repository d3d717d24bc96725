package gateway

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// laterPageAskers are the ways a client asks for the second page of the
// rug's tools alone, with the cursor p2 it was given: in a 2025-11-25
// session, as a 2026-07-28 request, over /ws, and with the cursor spelt
// Cursor (which the rug, reading JSON as Go's encoding/json does, takes
// for the cursor).
var laterPageAskers = []struct {
	name string
	ask  func(t *testing.T, gw, route string) string
}{
	{"session", func(t *testing.T, gw, route string) string {
		url := gw + "/mcp/" + route
		hdr := map[string]string{"Mcp-Session-Id": initialize(t, url), "Mcp-Protocol-Version": "2025-11-25"}
		_, _, body := post(t, url, hdr, `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"cursor":"p2"}}`)
		return body
	}},
	{"stateless", func(t *testing.T, gw, route string) string {
		return statelessAs(t, gw+"/mcp/"+route, "mallory", "tools/list", "", `{"cursor":"p2"}`)
	}},
	{"stateless_Cursor", func(t *testing.T, gw, route string) string {
		return statelessAs(t, gw+"/mcp/"+route, "mallory", "tools/list", "", `{"Cursor":"p2"}`)
	}},
	{"ws", func(t *testing.T, gw, route string) string {
		return wsRequest(t, gw, route, `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"cursor":"p2"}}`)
	}},
}

// TestAttackLaterPageAlone: the rug lists fetch on a first page and echo
// on a second, and is pinned from a complete listing. A client asks for
// the second page alone, with the cursor it was given. The inventory took
// that page for the whole list and blocked fetch as removed, for every
// client, until an operator approved it again: one agent denied every
// other the tools of the pages before. A page asked for with a cursor
// that continues no listing concludes nothing; fetch stays callable by a
// client that listed it and by one that did not.
func TestAttackLaterPageAlone(t *testing.T) {
	for _, route := range []string{"http", "stdio"} {
		for _, asker := range laterPageAskers {
			t.Run(route+"/"+asker.name, func(t *testing.T) {
				gw, _, r := rugGateway(t)
				url := gw.URL + "/mcp/" + route
				if err := os.WriteFile(filepath.Join(r.dir, "pagedfirst"), nil, 0o600); err != nil {
					t.Fatal(err)
				}
				if list := statelessAs(t, url, "pinner", "tools/list", "", ""); !strings.Contains(list, rugBenign) {
					t.Fatalf("first page: %s", list)
				}
				if list := statelessAs(t, url, "pinner", "tools/list", "", `{"cursor":"p2"}`); !strings.Contains(list, "echo") {
					t.Fatalf("last page: %s", list)
				}
				if list := asker.ask(t, gw.URL, route); !strings.Contains(list, "echo") {
					t.Fatalf("the page asked for alone: %s", list)
				}
				for _, agent := range []string{"pinner", "fresh"} {
					if got := statelessAs(t, url, agent, "tools/call", "fetch", fetchCall); !strings.Contains(got, "fetched") {
						t.Errorf("%s's call of fetch: got %.300s, want it forwarded (rug saw %q)", agent, got, r.log())
					}
				}
			})
		}
	}
}
