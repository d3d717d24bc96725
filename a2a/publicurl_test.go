package a2a

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/go-json-experiment/json"
)

// With public_url set, the card the gateway signs names the gateway's
// URL whatever Host a client sends: a card for a made-up host, signed by
// the gateway's key, would send other clients wherever its requester
// chose.
func TestPublicURLCardForgedHost(t *testing.T) {
	_, gwKey, _ := ed25519.GenerateKey(rand.Reader)
	agent, _ := signedAgent(t, false, "")
	gw := serve(t, allow, agent.URL, Options{SigningKey: gwKey, PublicURL: "https://gw.example.com/"})
	req, _ := http.NewRequest(http.MethodGet, gw.URL+"/a2a/stub/.well-known/agent-card.json", nil)
	req.Host = "evil.example"
	req.Header.Set("X-Forwarded-Host", "evil.example")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("card: %d %s", resp.StatusCode, b)
	}
	var card map[string]any
	_ = json.Unmarshal(b, &card)
	if card["url"] != "https://gw.example.com/a2a/stub" {
		t.Errorf("card url %v, want https://gw.example.com/a2a/stub", card["url"])
	}
	sigs, _ := card["signatures"].([]any)
	if len(sigs) != 1 {
		t.Fatalf("signatures: %v", card["signatures"])
	}
	hdr, _ := base64.RawURLEncoding.DecodeString(sigs[0].(map[string]any)["protected"].(string))
	if strings.Contains(string(b), "evil.example") || !strings.Contains(string(hdr), `"jku":"https://gw.example.com/a2a/.well-known/jwks.json"`) {
		t.Errorf("the served card names the Host the client made up: %s / header %s", b, hdr)
	}
	for _, bad := range []string{"gw.example.com", "ftp://gw.example.com", "https://gw.example.com/base", "https://u:p@gw.example.com", "https://gw.example.com?x=1"} {
		if _, err := New(Options{PublicURL: bad}, nil); err == nil {
			t.Errorf("public_url %q accepted", bad)
		}
	}
}
