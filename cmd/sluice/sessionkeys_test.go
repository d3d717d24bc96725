package main

import (
	"encoding/base64"
	"os"
	"path/filepath"
	"strings"
	"testing"
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
	for _, bad := range []string{"c2hvcnQ=", "not base64!"} {
		if _, err := parseConfig("sluice.yaml", []byte("session_keys: [\""+bad+"\"]\n")); err == nil || !strings.Contains(err.Error(), "session_keys[0]") {
			t.Errorf("session key %q: got %v, want an error naming session_keys[0]", bad, err)
		}
	}
}
