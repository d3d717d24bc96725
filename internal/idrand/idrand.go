// Package idrand draws the random part of identifiers made on every call
// (transaction, event and intent ids) without a system call each.
//
// crypto/rand.Read asks the kernel every time; at four ids per tools/call
// that was about 0.7 µs of a call's CPU. Read instead takes bytes from a
// ChaCha8 generator (math/rand/v2's, a cryptographically strong one that
// erases its past state as it goes) seeded from crypto/rand, one per
// goroutine at a time from a pool. Ids drawn this way are as hard to
// guess as crypto/rand's; secrets and keys still come from crypto/rand.
package idrand

import (
	"crypto/rand"
	mrand "math/rand/v2"
	"sync"
)

var generators = sync.Pool{New: func() any {
	var seed [32]byte
	_, _ = rand.Read(seed[:]) // crypto/rand.Read never fails (Go 1.24+).
	return mrand.NewChaCha8(seed)
}}

// Read fills b with random bytes.
func Read(b []byte) {
	g := generators.Get().(*mrand.ChaCha8)
	_, _ = g.Read(b) // never fails
	generators.Put(g)
}
