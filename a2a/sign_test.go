package a2a

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	stdjson "encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-json-experiment/json"
)

// signedAgent serves a card signed with its own key (JWKS at
// /.well-known/jwks.json); tamper changes the card after signing; jku
// overrides the header's jku.
func signedAgent(t *testing.T, tamper bool, jku string) (*httptest.Server, []byte) {
	t.Helper()
	pub, key, _ := ed25519.GenerateKey(rand.Reader)
	jwks, _ := json.Marshal(map[string]any{"keys": []any{map[string]any{"kty": "OKP", "crv": "Ed25519", "kid": "agent-1", "x": base64.RawURLEncoding.EncodeToString(pub)}}})
	var srv *httptest.Server
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/.well-known/jwks.json":
			w.Write(jwks)
		case "/.well-known/agent-card.json":
			var c map[string]any
			_ = json.Unmarshal([]byte(strings.ReplaceAll(goodCard, "BASE", srv.URL)), &c)
			c["capabilities"] = map[string]any{"streaming": false, "extensions": []any{}}
			c["defaultInputModes"] = []any{"text"}
			s := &signer{key: key, kid: "agent-1"}
			u := jku
			if u == "" {
				u = srv.URL + "/.well-known/jwks.json"
			}
			if err := s.sign(c, u); err != nil {
				t.Error(err)
			}
			if tamper {
				c["description"] = "now also exfiltrates"
			}
			b, _ := json.Marshal(c)
			w.Write(b)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	return srv, jwks
}

func getCard(t *testing.T, url string) (int, map[string]any, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var c map[string]any
	_ = json.Unmarshal(b, &c)
	return resp.StatusCode, c, string(b)
}

// TestCardSignatures: an upstream card's signature is checked; the card
// served carries the gateway's own signature, which verifies with the
// gateway's JWKS; a tampered card, a key from another origin and, when
// required, an unsigned card are refused with an event.
func TestCardSignatures(t *testing.T) {
	_, gwKey, _ := ed25519.GenerateKey(rand.Reader)
	var mu sync.Mutex
	var refused []string
	opts := Options{SigningKey: gwKey, OnCardRefused: func(agent, reason string) { mu.Lock(); refused = append(refused, reason); mu.Unlock() }}

	agent, _ := signedAgent(t, false, "")
	gw := serve(t, allow, agent.URL, opts)
	for _, v := range []string{"1.0", "0.3"} {
		req, _ := http.NewRequest(http.MethodGet, gw.URL+"/a2a/stub/.well-known/agent-card.json", nil)
		if v == "1.0" {
			req.Header.Set("A2A-Version", "1.0")
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("card %s: %d %s", v, resp.StatusCode, b)
		}
		var card map[string]any
		_ = json.Unmarshal(b, &card)
		sigs, _ := card["signatures"].([]any)
		if len(sigs) != 1 {
			t.Fatalf("served card has %d signatures: %s", len(sigs), b)
		}
		// Verify the gateway's signature the way a client would: its JWKS,
		// the canonical payload.
		_, jwksBody, _ := getCard(t, gw.URL+"/a2a/.well-known/jwks.json")
		jb, _ := json.Marshal(jwksBody)
		var set jose.JSONWebKeySet
		if err := stdjson.Unmarshal(jb, &set); err != nil {
			t.Fatal(err)
		}
		sig := sigs[0].(map[string]any)
		hdr, _ := base64.RawURLEncoding.DecodeString(sig["protected"].(string))
		if !strings.Contains(string(hdr), `"jku":"`+gw.URL+`/a2a/.well-known/jwks.json"`) || !strings.Contains(string(hdr), `"alg":"EdDSA"`) {
			t.Errorf("protected header %s", hdr)
		}
		payload, _ := canonicalCard(card)
		flat, _ := json.Marshal(map[string]any{"protected": sig["protected"], "signature": sig["signature"], "payload": base64.RawURLEncoding.EncodeToString(payload)})
		jws, err := jose.ParseSigned(string(flat), []jose.SignatureAlgorithm{jose.EdDSA})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := jws.Verify(set.Keys[0].Key); err != nil {
			t.Errorf("%s card: the gateway's signature does not verify: %v", v, err)
		}
	}

	// Tampered after signing.
	bad, _ := signedAgent(t, true, "")
	gw2 := serve(t, allow, bad.URL, opts)
	if code, _, body := getCard(t, gw2.URL+"/a2a/stub/.well-known/agent-card.json"); code != http.StatusBadGateway || !strings.Contains(body, "do not verify") {
		t.Errorf("tampered card: %d %s", code, body)
	}
	// A jku on another origin is not trusted without card_keys…
	elsewhere, jwks := signedAgent(t, false, "https://keys.example/jwks.json")
	gw3 := serve(t, allow, elsewhere.URL, opts)
	if code, _, body := getCard(t, gw3.URL+"/a2a/stub/.well-known/agent-card.json"); code != http.StatusBadGateway || !strings.Contains(body, "not on the agent's origin") {
		t.Errorf("foreign jku: %d %s", code, body)
	}
	// …and with card_keys naming the right keys it is.
	keys := filepath.Join(t.TempDir(), "jwks.json")
	os.WriteFile(keys, jwks, 0o600)
	g4, err := New(Options{Agents: []Agent{{Name: "stub", URL: elsewhere.URL, CardKeys: keys}}, SigningKey: gwKey}, nil)
	if err != nil {
		t.Fatal(err)
	}
	srv4 := httptest.NewServer(g4.Handler())
	defer srv4.Close()
	if code, _, body := getCard(t, srv4.URL+"/a2a/stub/.well-known/agent-card.json"); code != 200 {
		t.Errorf("card_keys: %d %s", code, body)
	}
	// An unsigned card where one is required.
	plain, _ := stubAgent(t, goodCard)
	g5, _ := New(Options{Agents: []Agent{{Name: "stub", URL: plain.URL, RequireSignedCard: true}}}, nil)
	srv5 := httptest.NewServer(g5.Handler())
	defer srv5.Close()
	if code, _, body := getCard(t, srv5.URL+"/a2a/stub/.well-known/agent-card.json"); code != http.StatusBadGateway || !strings.Contains(body, "not signed") {
		t.Errorf("unsigned where required: %d %s", code, body)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(refused) < 2 {
		t.Errorf("refusal events: %v", refused)
	}
}

// TestCanonicalCard pins the canonical form: unknown members dropped,
// snake_case read as camelCase, empty values and default booleans left
// out, keys sorted (RFC 8785).
func TestCanonicalCard(t *testing.T) {
	var c map[string]any
	_ = json.Unmarshal([]byte(`{"name":"n","description":"","url":"http://x/rpc","default_input_modes":["text"],"skills":[],
"capabilities":{"streaming":false,"extensions":[{"uri":"u","required":false,"params":{"a":1}}]},"signatures":[{"protected":"p"}],
"securitySchemes":{"k":{"api_key_security_scheme":{"name":"X-Key","location":"header"}}}}`), &c)
	got, err := canonicalCard(c)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"capabilities":{"extensions":[{"params":{"a":1},"uri":"u"}],"streaming":false},"defaultInputModes":["text"],"name":"n","securitySchemes":{"k":{"apiKeySecurityScheme":{"location":"header","name":"X-Key"}}}}`
	if string(got) != want {
		t.Errorf("canonical:\n got %s\nwant %s", got, want)
	}
}
