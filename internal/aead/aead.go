// Package aead makes the AES-256-GCM ciphers of the keys replicas share
// (session_keys): the first seals, each opens, so that a key can be
// rotated in (current first, previous after).
package aead

import (
	"crypto/aes"
	"crypto/cipher"
	"fmt"
)

// FromKeys returns an AES-256-GCM AEAD for each of keys, in order. what
// names the keys in an error ("session key", "push relay: key").
func FromKeys(keys [][]byte, what string) ([]cipher.AEAD, error) {
	out := make([]cipher.AEAD, 0, len(keys))
	for i, k := range keys {
		if len(k) != 32 {
			return nil, fmt.Errorf("%s %d is %d bytes, want 32 (AES-256)", what, i+1, len(k))
		}
		b, err := aes.NewCipher(k)
		if err != nil {
			return nil, err
		}
		a, err := cipher.NewGCM(b)
		if err != nil {
			return nil, err
		}
		out = append(out, a)
	}
	return out, nil
}
