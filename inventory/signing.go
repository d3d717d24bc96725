package inventory

import (
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// KeyFileName is the name of the signing key that New creates in the data
// directory when no key is given.
const KeyFileName = "signing-key.pem"

const pemPrivateKey = "PRIVATE KEY"

// LoadOrCreateKey loads the Ed25519 key at path, or, if there is no file
// there, generates one and writes it with mode 0600 (creating the directory
// with mode 0700 if needed). The file is PEM "PRIVATE KEY" (PKCS #8), the
// format of `openssl genpkey -algorithm ed25519`.
func LoadOrCreateKey(path string) (ed25519.PrivateKey, error) {
	key, err := LoadKey(path)
	if err == nil || !errors.Is(err, fs.ErrNotExist) {
		return key, err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("inventory: signing key: %w", err)
	}
	_, key, err = ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("inventory: generating signing key: %w", err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, fmt.Errorf("inventory: encoding signing key: %w", err)
	}
	// O_EXCL: if another process created the key meanwhile, use theirs
	// rather than overwrite a key that may already have signed snapshots.
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		return LoadKey(path)
	}
	if err != nil {
		return nil, fmt.Errorf("inventory: writing signing key: %w", err)
	}
	err = pem.Encode(f, &pem.Block{Type: pemPrivateKey, Bytes: der})
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(path)
		return nil, fmt.Errorf("inventory: writing signing key %s: %w", path, err)
	}
	return key, nil
}

// LoadKey reads an Ed25519 private key from a PEM "PRIVATE KEY" (PKCS #8)
// file. A missing file is an error wrapping fs.ErrNotExist.
func LoadKey(path string) (ed25519.PrivateKey, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("inventory: signing key: %w", err)
	}
	block, _ := pem.Decode(b)
	if block == nil || block.Type != pemPrivateKey {
		return nil, fmt.Errorf("inventory: signing key %s: not a PEM %q block; "+
			"create one with: openssl genpkey -algorithm ed25519 -out %s", path, pemPrivateKey, path)
	}
	k, err := x509.ParsePKCS8PrivateKey(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("inventory: signing key %s: %w", path, err)
	}
	key, ok := k.(ed25519.PrivateKey)
	if !ok {
		return nil, fmt.Errorf("inventory: signing key %s: %T, want an Ed25519 key", path, k)
	}
	return key, nil
}

// KeyID names a public key in snapshot files and messages: "ed25519:" and
// the first 16 hex digits of the SHA-256 of the raw 32-byte key.
func KeyID(pub ed25519.PublicKey) string {
	h := sha256.Sum256(pub)
	return "ed25519:" + hex.EncodeToString(h[:8])
}
