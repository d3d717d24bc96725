package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// `sluice keys create --config X` for a config without api_key among its
// auth modes filled the key file and said nothing, while its gateway let
// every agent in unauthenticated. It says so now, and not for a config
// that asks for keys.
func TestKeysCreateConfigWithoutAPIKey(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		cfg      string
		wantNote bool
	}{
		{"policy: {default: deny}\n", true},
		{"auth: {mode: jwt, jwt: {issuer: https://idp.example, audience: [x], jwks_url: https://idp.example/jwks}}\n", true},
		{"auth: {mode: api_key}\n", false},
		{"auth: {mode: [jwt, api_key], jwt: {issuer: https://idp.example, audience: [x], jwks_url: https://idp.example/jwks}}\n", false},
	} {
		sub, _ := os.MkdirTemp(dir, "c")
		cfg := filepath.Join(sub, "sluice.yaml")
		os.WriteFile(cfg, []byte("data_dir: data\n"+c.cfg), 0o600)
		var out bytes.Buffer
		if err := runKeys(t.Context(), []string{"create", "--agent", "reporter", "--config", cfg}, &out); err != nil {
			t.Fatalf("%s: %v", c.cfg, err)
		}
		if got := strings.Contains(out.String(), "does not ask for this key"); got != c.wantNote {
			t.Errorf("config %q: note %v, want %v:\n%s", c.cfg, got, c.wantNote, out.String())
		}
	}
}
