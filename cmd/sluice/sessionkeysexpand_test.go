package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestSessionKeysUnexpandedSaysWhy: a session key from an unset ${VAR}
// or an unreadable ${file:…} was refused as "want the base64 of 32
// random bytes", which sent the operator to check a key that was never
// read; the error now names the variable or the file, as it does for
// every other ${…}.
func TestSessionKeysUnexpandedSaysWhy(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "session.key")
	for _, tc := range []struct{ key, want string }{
		{"${TRIAL_UNSET_SESSION_KEY}", "TRIAL_UNSET_SESSION_KEY"},
		{"${file:" + missing + "}", missing},
	} {
		_, err := parseConfig("c.yaml", []byte("session_keys: ['"+tc.key+"']\n"))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("session_keys: [%s]: got %v, want an error naming %s", tc.key, err, tc.want)
		}
	}
}
