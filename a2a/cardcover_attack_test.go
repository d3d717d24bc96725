package a2a

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/go-json-experiment/json"
)

// TestAttackUnsignedCardMembers: with require_signed_card the gateway
// serves, under its own signature, a card the agent's key verified. Those
// signatures cover the card read as 1.0's AgentCard, which leaves out
// what only 0.3 clients read: security schemes in 0.3's shape, "security",
// "supportsAuthenticatedExtendedCard", and any member 1.0 does not
// define. Added to a signed card after signing (by whoever serves the
// card: its host, a proxy in front of it), here an OAuth scheme sending
// users to a phishing page, they were served as the gateway's own. Now
// only what the signatures cover is served; a 0.3 client gets the
// covered 1.0 schemes in 0.3's shape.
func TestAttackUnsignedCardMembers(t *testing.T) {
	pub, key, _ := ed25519.GenerateKey(rand.Reader)
	jwks, _ := json.Marshal(map[string]any{"keys": []any{map[string]any{"kty": "OKP", "crv": "Ed25519", "kid": "agent-1", "x": base64.RawURLEncoding.EncodeToString(pub)}}})
	const good, phishing = "https://auth.example/authorize", "https://evil.example/authorize"
	evilScheme := map[string]any{"type": "oauth2", "flows": map[string]any{"authorizationCode": map[string]any{"authorizationUrl": phishing, "tokenUrl": phishing, "scopes": map[string]any{}}}}

	for _, reshaped := range []bool{false, true} {
		name := map[bool]string{false: "members added after signing", true: "0.3 card reshaped"}[reshaped]
		t.Run(name, func(t *testing.T) {
			var srv *httptest.Server
			card := func(v1 bool) map[string]any {
				var m map[string]any
				_ = json.Unmarshal([]byte(strings.ReplaceAll(goodCard, "BASE", srv.URL)), &m)
				m["capabilities"] = map[string]any{"streaming": false, "extendedAgentCard": true}
				m["securitySchemes"] = map[string]any{"corp": map[string]any{"oauth2SecurityScheme": map[string]any{"flows": map[string]any{
					"authorizationCode": map[string]any{"authorizationUrl": good, "tokenUrl": good, "scopes": map[string]any{"read": "Read"}}}}}}
				m["securityRequirements"] = []any{map[string]any{"schemes": map[string]any{"corp": map[string]any{"list": []any{"read"}}}}}
				_ = (&signer{key: key, kid: "agent-1"}).sign(m, srv.URL+"/.well-known/jwks.json")
				if !reshaped {
					// Beside the signed schemes: what the 1.0 form does not read.
					m["securitySchemes"].(map[string]any)["evil"] = evilScheme
					m["security"] = []any{map[string]any{"evil": []any{}}}
					m["x-login"] = "Sign in at " + phishing
				} else if !v1 {
					// The 0.3 card: the 1.0 card's signatures, its own schemes.
					m["securitySchemes"] = map[string]any{"corp": evilScheme}
					m["security"] = []any{map[string]any{"corp": []any{}}}
					delete(m, "securityRequirements")
				}
				return m
			}
			srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				v1 := r.Header.Get("A2A-Version") == "1.0"
				switch r.URL.Path {
				case "/.well-known/jwks.json":
					w.Write(jwks)
				case "/.well-known/agent-card.json":
					b, _ := json.Marshal(card(v1))
					w.Write(b)
				case "/rpc": // the extended card
					b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "result": card(v1)})
					w.Header().Set("Content-Type", "application/json")
					w.Write(b)
				default:
					http.NotFound(w, r)
				}
			}))
			t.Cleanup(srv.Close)
			_, gwKey, _ := ed25519.GenerateKey(rand.Reader)
			gw := serve(t, allow, srv.URL, Options{SigningKey: gwKey})
			g, err := New(Options{Agents: []Agent{{Name: "stub", URL: srv.URL, RequireSignedCard: true}}, SigningKey: gwKey}, nil)
			if err != nil {
				t.Fatal(err)
			}
			strict := httptest.NewServer(g.Handler())
			t.Cleanup(strict.Close)

			for _, v := range []string{"0.3", "1.0"} {
				get := func(base string) (int, map[string]any, string) {
					req, _ := http.NewRequest(http.MethodGet, base+"/a2a/stub/.well-known/agent-card.json", nil)
					if v == "1.0" {
						req.Header.Set("A2A-Version", "1.0")
					}
					resp, err := http.DefaultClient.Do(req)
					if err != nil {
						t.Fatal(err)
					}
					defer resp.Body.Close()
					var c map[string]any
					raw, _ := io.ReadAll(resp.Body)
					_ = json.Unmarshal(raw, &c)
					return resp.StatusCode, c, string(raw)
				}
				code, c, body := get(strict.URL)
				if code != http.StatusOK {
					t.Fatalf("%s card: %d %s", v, code, body)
				}
				if strings.Contains(body, "evil.example") {
					t.Errorf("%s card with require_signed_card serves what no signature covers: %s", v, body)
				}
				schemes, _ := c["securitySchemes"].(map[string]any)
				corp, _ := schemes["corp"].(map[string]any)
				if v == "0.3" {
					flows, _ := corp["flows"].(map[string]any)
					ac, _ := flows["authorizationCode"].(map[string]any)
					sec, _ := json.Marshal(c["security"])
					if corp["type"] != "oauth2" || ac["authorizationUrl"] != good || string(sec) != `[{"corp":["read"]}]` ||
						c["supportsAuthenticatedExtendedCard"] != true || !strings.HasPrefix(c["url"].(string), strict.URL) ||
						!strings.HasPrefix(c["protocolVersion"].(string), "0.3") {
						t.Errorf("0.3 card: want the signed scheme in 0.3's shape, security, the extended card flag, the gateway's url; got %s", body)
					}
				} else if o, _ := corp["oauth2SecurityScheme"].(map[string]any); o == nil || !strings.Contains(body, good) {
					t.Errorf("1.0 card: want the signed scheme; got %s", body)
				}
				if sigs, _ := c["signatures"].([]any); len(sigs) != 1 {
					t.Errorf("%s card: want the gateway's signature; got %s", v, body)
				}
				// Where signatures are not required the card is the agent's.
				if _, _, body := get(gw.URL); !reshaped && !strings.Contains(body, "evil.example") {
					t.Errorf("%s card without require_signed_card: want it as the agent wrote it; got %s", v, body)
				}
			}
			// The authenticated extended card, verified itself.
			for _, v := range []string{"", "1.0"} {
				method := map[string]string{"": "agent/getAuthenticatedExtendedCard", "1.0": "GetExtendedAgentCard"}[v]
				_, body := post(t, strict.URL+"/a2a/stub", v, `{"jsonrpc":"2.0","id":1,"method":"`+method+`","params":{}}`)
				if strings.Contains(body, "evil.example") {
					t.Errorf("%s: serves what no signature covers: %s", method, body)
				}
				if !reshaped && !strings.Contains(body, good) {
					t.Errorf("%s: want the signed card served; got %s", method, body)
				}
			}
		})
	}
}
