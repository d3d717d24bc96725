package idrand

import (
	"sync"
	"testing"
)

// Ids drawn at once from many goroutines never repeat, and two generators
// the pool makes do not share a seed (a fixed or shared seed would repeat
// the first draws).
func TestReadDistinct(t *testing.T) {
	const goroutines, each = 8, 2000
	var mu sync.Mutex
	seen := make(map[[10]byte]bool, goroutines*each)
	var wg sync.WaitGroup
	for range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range each {
				var b [10]byte
				Read(b[:])
				mu.Lock()
				if seen[b] {
					t.Errorf("id bytes %x drawn twice", b)
				}
				seen[b] = true
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	a, b := generators.New(), generators.New()
	var x, y [16]byte
	_, _ = a.(interface{ Read([]byte) (int, error) }).Read(x[:])
	_, _ = b.(interface{ Read([]byte) (int, error) }).Read(y[:])
	if x == y {
		t.Fatalf("two new generators drew the same first bytes %x", x)
	}
}

func BenchmarkRead(b *testing.B) {
	var x [10]byte
	for b.Loop() {
		Read(x[:])
	}
}
