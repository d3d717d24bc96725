package gateway

import (
	"bufio"
	"os"
	"slices"

	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/sluicehq/sluice/gateway/transport"
	"github.com/sluicehq/sluice/inventory"
)

// eraUpstream is a stateless MCP server of both eras (it gives no
// session): a 2026-07-28 request (its MCP-Protocol-Version header) is
// listed according to the capabilities of its _meta, ask too to one
// declaring elicitation; an earlier request is served on its own,
// knowing no capabilities (it has no session that initialize
// declared them in), and listed echo only whatever its _meta says.
type eraUpstream struct{}

func (eraUpstream) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.WriteHeader(http.StatusMethodNotAllowed)
		return
	}
	b, _ := io.ReadAll(r.Body)
	var m struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Params struct {
			Name string `json:"name"`
			Meta struct {
				Capabilities map[string]any `json:"io.modelcontextprotocol/clientCapabilities"`
			} `json:"_meta"`
		} `json:"params"`
	}
	if json.Unmarshal(b, &m) != nil {
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	if m.ID == nil {
		w.WriteHeader(http.StatusAccepted)
		return
	}
	var result string
	switch m.Method {
	case "initialize":
		result = `{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"era","version":"1"}}`
	case "tools/list":
		tools := `{"name":"echo","description":"Echo a message.","inputSchema":{"type":"object"}}`
		if _, ok := m.Params.Meta.Capabilities["elicitation"]; ok && r.Header.Get("Mcp-Protocol-Version") == modernVersion {
			tools += `,{"name":"ask","description":"Ask the user.","inputSchema":{"type":"object"}}`
		}
		result = `{"tools":[` + tools + `]}`
	case "tools/call":
		result = `{"content":[{"type":"text","text":"ran ` + m.Params.Name + `"}]}`
	default:
		result = `{}`
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = io.WriteString(w, `{"jsonrpc":"2.0","id":`+string(m.ID)+`,"result":`+result+`}`)
}

// TestAttackCapabilitySetMetaOldEra: a 2025-11-25 request has no
// capabilities in its _meta (that member is 2026-07-28's); its server,
// here a stateless one, lists it what a client declaring none is listed.
// The gateway took the _meta's capabilities for the list's capability set
// in a request of any version: a client sending one 2025-11-25 tools/list
// with elicitation in its _meta had elicitation's set pinned with the
// list of none, and a 2026-07-28 client really declaring elicitation then
// had ask denied inventory_drift, as new under a pinned set, for
// everyone.
func TestAttackCapabilitySetMetaOldEra(t *testing.T) {
	srv := httptest.NewServer(eraUpstream{})
	t.Cleanup(srv.Close)
	gw, _ := driftGateway(t, Options{Upstreams: []Upstream{{Name: "era", URL: srv.URL}}})
	url := gw.URL + "/mcp/era"
	old := map[string]string{"Mcp-Protocol-Version": "2025-11-25"}
	if _, _, body := post(t, url, old, `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`); !strings.Contains(body, "Echo a message.") {
		t.Fatalf("first listing: %s", body)
	}
	_, _, body := post(t, url, old, `{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/clientCapabilities":{"elicitation":{}}}}}`)
	if strings.Contains(body, `"ask"`) {
		t.Fatalf("the server listed ask to a 2025-11-25 request: %s", body)
	}

	meta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"alice","version":"1"},"io.modelcontextprotocol/clientCapabilities":{"elicitation":{}}}`
	if _, _, body := post(t, url, modernHeaders("tools/list", ""), `{"jsonrpc":"2.0","id":3,"method":"tools/list","params":{`+meta+`}}`); !strings.Contains(body, `"ask"`) {
		t.Errorf("tools/list of a 2026-07-28 client declaring elicitation: got %s, want ask", body)
	}
	if _, _, body := post(t, url, modernHeaders("tools/call", "ask"), `{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"ask","arguments":{},`+meta+`}}`); !strings.Contains(body, "ran ask") {
		t.Errorf("call of ask: got %s, want it run", body)
	}
}

// TestHelperEraStdio is eraUpstream on stdio, when
// SLUICE_TEST_ERA_STDIO is 1: a 2026-07-28 request (its _meta's
// protocol version) is listed by the capabilities of its _meta, an
// earlier one by those of the connection's initialize, none before it.
func TestHelperEraStdio(t *testing.T) {
	if os.Getenv("SLUICE_TEST_ERA_STDIO") != "1" {
		return
	}
	in := bufio.NewReaderSize(os.Stdin, 1<<20)
	var initCaps map[string]any
	for {
		line, err := in.ReadBytes('\n')
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				Name         string         `json:"name"`
				Capabilities map[string]any `json:"capabilities"`
				Meta         struct {
					Version      string         `json:"io.modelcontextprotocol/protocolVersion"`
					Capabilities map[string]any `json:"io.modelcontextprotocol/clientCapabilities"`
				} `json:"_meta"`
			} `json:"params"`
		}
		if json.Unmarshal(line, &m) == nil && m.ID != nil {
			var result string
			switch m.Method {
			case "initialize":
				initCaps = m.Params.Capabilities
				result = `{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"era","version":"1"}}`
			case "tools/list":
				caps := initCaps
				if m.Params.Meta.Version == modernVersion {
					caps = m.Params.Meta.Capabilities
				}
				tools := `{"name":"echo","description":"Echo a message.","inputSchema":{"type":"object"}}`
				if _, ok := caps["elicitation"]; ok {
					tools += `,{"name":"ask","description":"Ask the user.","inputSchema":{"type":"object"}}`
				}
				result = `{"tools":[` + tools + `]}`
			case "tools/call":
				result = `{"content":[{"type":"text","text":"ran ` + m.Params.Name + `"}]}`
			default:
				result = `{}`
			}
			os.Stdout.Write([]byte(`{"jsonrpc":"2.0","id":` + string(m.ID) + `,"result":` + result + "}\n"))
		}
		if err != nil {
			os.Exit(0) // before the test framework writes to stdout
		}
	}
}

// TestAttackCapabilitySetMetaOldEraConn is TestAttackCapabilitySetMetaOldEra
// over /ws to a stdio server: a connection's 2025-11-25 tools/list before
// any initialize, with elicitation in its _meta, was recorded under
// elicitation's set.
func TestAttackCapabilitySetMetaOldEraConn(t *testing.T) {
	gw, _ := driftGateway(t, Options{Upstreams: []Upstream{{Name: "era", Command: os.Args[0], Args: []string{"-test.run=^TestHelperEraStdio$"},
		Env: map[string]string{"SLUICE_TEST_ERA_STDIO": "1"}}}})
	ws := "ws" + strings.TrimPrefix(gw.URL, "http") + "/ws/era"
	send := func(msg, id string) string {
		t.Helper()
		c := dialWith(t, &transport.WSDialer{URL: ws})
		m := exchangeOn(t, c, msg, id)
		return string(m.Raw)
	}
	if body := send(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, "1"); !strings.Contains(body, "Echo a message.") {
		t.Fatalf("first listing: %s", body)
	}
	if body := send(`{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/clientCapabilities":{"elicitation":{}}}}}`, "2"); strings.Contains(body, `"ask"`) {
		t.Fatalf("the server listed ask to a 2025-11-25 request: %s", body)
	}
	meta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"alice","version":"1"},"io.modelcontextprotocol/clientCapabilities":{"elicitation":{}}}`
	if body := send(`{"jsonrpc":"2.0","id":3,"method":"tools/list","params":{`+meta+`}}`, "3"); !strings.Contains(body, `"ask"`) {
		t.Errorf("tools/list of a 2026-07-28 client declaring elicitation: got %s, want ask", body)
	}
	if body := send(`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"ask","arguments":{},`+meta+`}}`, "4"); !strings.Contains(body, "ran ask") {
		t.Errorf("call of ask: got %s, want it run", body)
	}
}

// TestCapabilitySetOfAdoptedSessionHugeCaps: a session whose client
// declares elicitation and extensions whose names alone are longer than
// a sealed id carries keeps, on another replica, a capability set with
// elicitation in it. It kept no capabilities, and its lists there counted
// as declaring none: ask, listed to it for its elicitation, was drift
// under the set of none, denied for everyone.
func TestCapabilitySetOfAdoptedSessionHugeCaps(t *testing.T) {
	var ext []string
	for _, c := range "abcde" {
		ext = append(ext, `"x.example/`+strings.Repeat(string(c), 110)+`":{}`)
	}
	adoptedSessionListsAsk(t, `{"elicitation":{},"extensions":{`+strings.Join(ext, ",")+`}}`)
}

// TestSealableCapsBounded: whatever a client declares, a sealed id
// carries at most maxSealedCaps bytes of it, with its capability set.
func TestSealableCapsBounded(t *testing.T) {
	leaves := `{"form":{},"url":{},"tools":{},"context":{},"listChanged":true,"list":{},"cancel":{},"requests":{}}`
	var ext []string
	for i := range 8 {
		ext = append(ext, `"`+strings.Repeat(string(rune('a'+i)), 128)+`":{}`)
	}
	caps := jsontext.Value(`{"elicitation":` + leaves + `,"roots":` + leaves + `,"sampling":` + leaves + `,"tasks":` + leaves +
		`,"extensions":{` + strings.Join(ext, ",") + `}}`)
	got := sealableCaps(caps)
	if len(got) == 0 || len(got) > maxSealedCaps {
		t.Fatalf("sealableCaps: %d bytes (%s), want 1 to %d", len(got), got, maxSealedCaps)
	}
	want := strings.Split(inventory.CapabilitySet(caps), ",")
	want = slices.DeleteFunc(want, func(w string) bool { return strings.HasPrefix(w, "extensions/") })
	want = append(want, "extensions")
	slices.Sort(want)
	if set := inventory.CapabilitySet(got); set != strings.Join(want, ",") {
		t.Errorf("capability set of what is sealed: %q, want %q", set, strings.Join(want, ","))
	}
}
