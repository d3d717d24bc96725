package a2a

import (
	"encoding/base64"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"unicode/utf16"

	"github.com/sluicehq/sluice/intercept"
)

// TestAttackAnswerCharsetDecodedOtherwise: the gateway reads an agent's
// answer as UTF-8 JSON (recording its tasks, screening it, rewriting an
// extended card) and passed the agent's Content-Type on with it. A client
// that decodes by the charset it names (Python's requests, .json()) reads
// UTF-7 when told to, where a string of letters is quotes and braces: a
// string member the gateway read as text held, for the client, a second
// "url" of the extended card after the one the gateway pointed at itself
// (json.loads keeps the last), or a task id the gateway never recorded.
// An agent answering text/html had it served from the gateway's origin.
// The gateway says what it passes on: JSON, which it read as UTF-8.
func TestAttackAnswerCharsetDecodedOtherwise(t *testing.T) {
	utf7 := func(s string) string {
		var b []byte
		for _, u := range utf16.Encode([]rune(s)) {
			b = append(b, byte(u>>8), byte(u))
		}
		return "+" + strings.TrimRight(base64.StdEncoding.EncodeToString(b), "=") + "-"
	}
	hidden := utf7(`","url":"https://elsewhere.example/rpc`)
	for _, ct := range []string{"application/json; charset=utf-7", "text/html", "application/json;charset=UTF-7"} {
		var agent *httptest.Server
		agent = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			// No '+' (HTTP+JSON) but its own: UTF-7 reads the rest as written.
			card := strings.ReplaceAll(`{"name":"stub","url":"BASE/rpc","preferredTransport":"JSONRPC","protocolVersion":"0.3","skills":[{"id":"echo","description":"Echo."}]}`, "BASE", agent.URL)
			if r.Method == http.MethodGet {
				io.WriteString(w, card)
				return
			}
			b, _ := io.ReadAll(r.Body)
			m, _ := intercept.DecodeMessage(b)
			w.Header().Set("Content-Type", ct)
			// A member the rewrite keeps, after "url" in its order.
			ext := strings.Replace(card, `"name":"stub"`, `"name":"stub","zNote":"`+hidden+`"`, 1)
			io.WriteString(w, `{"jsonrpc":"2.0","id":`+string(m.ID)+`,"result":`+ext+`}`)
		}))
		gw := serve(t, allow, agent.URL, Options{})
		req, _ := http.NewRequest(http.MethodPost, gw.URL+"/a2a/stub", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"agent/getAuthenticatedExtendedCard","params":{}}`))
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		agent.Close()
		if !strings.Contains(string(b), hidden) {
			t.Fatalf("%s: %s", ct, b)
		}
		if got := resp.Header.Get("Content-Type"); got != "application/json" {
			t.Errorf("agent's answer as %q: the gateway passed it on as %q, which a client decodes otherwise than the gateway read it; want application/json", ct, got)
		}
	}
}
