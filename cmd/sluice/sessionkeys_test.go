package main

import (
	"encoding/base64"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestSessionKeysConfig(t *testing.T) {
	k1 := base64.StdEncoding.EncodeToString([]byte(strings.Repeat("a", 32)))
	file := filepath.Join(t.TempDir(), "old.key")
	os.WriteFile(file, []byte(base64.StdEncoding.EncodeToString([]byte(strings.Repeat("b", 32)))+"\n"), 0o600)
	cfg, err := parseConfig("sluice.yaml", []byte("session_keys: [\""+k1+"\", \"${file:"+file+"}\"]\n"))
	if err != nil {
		t.Fatal(err)
	}
	keys := cfg.options().SessionKeys
	if len(keys) != 2 || string(keys[0]) != strings.Repeat("a", 32) || string(keys[1]) != strings.Repeat("b", 32) {
		t.Errorf("session keys: got %q", keys)
	}
	if got := cfg.options().SessionMaxAge; got != 0 {
		t.Errorf("session max age unset: got %s, want 0 (the gateway's default)", got)
	}
	if cfg, err := parseConfig("sluice.yaml", []byte("session_keys: [\""+k1+"\"]\nsession_max_age: 8h\n")); err != nil || cfg.options().SessionMaxAge != 8*time.Hour {
		t.Errorf("session_max_age: 8h: got %v, %v", cfg, err)
	}
	for _, bad := range []string{"c2hvcnQ=", "not base64!"} {
		if _, err := parseConfig("sluice.yaml", []byte("session_keys: [\""+bad+"\"]\n")); err == nil || !strings.Contains(err.Error(), "session_keys[0]") {
			t.Errorf("session key %q: got %v, want an error naming session_keys[0]", bad, err)
		}
	}
}
