package telemetry

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
)

// SessionRefPrefix starts every session reference (SessionRef).
const SessionRefPrefix = "sha256:"

// SessionRef is how a session is recorded wherever others than its
// client read it: audit events, spans, logs, approval records, policy
// memory and the classifier's requests. A streamable HTTP session id
// (Mcp-Session-Id, sealed or not) or an HTTP+SSE sessionId is a bearer
// credential: whoever holds it can use the session, on any replica for
// a sealed one, until it ends. The reference is the first 12 bytes of
// the id's SHA-256, in hex, after SessionRefPrefix: the same for every
// event of the session (correlation), computable from the id by anyone
// who has it (sluice events --session ID), and not reversible: the ids
// the gateway issues hold at least 128 random bits (a sealed id, a
// random nonce too), so no key is needed to keep them from being guessed
// back, and a keyed hash would change
// its references when the keys rotate. It is not a credential: the
// gateway accepts none in place of an id. "" stays "", and a reference
// is its own reference.
func SessionRef(id string) string {
	if id == "" || IsSessionRef(id) {
		return id
	}
	h := sha256.Sum256([]byte(id))
	return SessionRefPrefix + hex.EncodeToString(h[:12])
}

// IsSessionRef reports whether s has the form of a SessionRef (the ids
// the gateway issues never do: they hold no ':').
func IsSessionRef(s string) bool {
	hexPart, ok := strings.CutPrefix(s, SessionRefPrefix)
	if !ok || len(hexPart) != 24 {
		return false
	}
	_, err := hex.DecodeString(hexPart)
	return err == nil && strings.ToLower(hexPart) == hexPart
}
