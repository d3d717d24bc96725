package inventory

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/sluicehq/sluice/internal/jcs"
)

// canonical returns the RFC 8785 (JSON Canonicalization Scheme) form of v in
// a new slice, leaving v untouched. Duplicate member names and invalid UTF-8
// are errors, as RFC 8785 requires I-JSON input.
func canonical(v jsontext.Value) (jsontext.Value, error) {
	c := v.Clone()
	if err := jcs.Canonicalize(&c); err != nil {
		return nil, fmt.Errorf("canonical JSON: %w", err)
	}
	return c, nil
}

// sum returns the lowercase hex SHA-256 of b.
func sum(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}
