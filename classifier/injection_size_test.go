package classifier

import (
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestAttackConcurrentScreeningBounded: many large results screened at
// once (a malicious upstream's, or many agents asking for large results
// together) each cost several times their size while read; the bytes
// being screened at once are bounded (screenBudget), a result over the
// bound screened alone, and every result is still screened whole.
func TestAttackConcurrentScreeningBounded(t *testing.T) {
	const limit = 3 << 20
	old := screening
	screening = newScreenBudget(limit)
	t.Cleanup(func() { screening = old })
	clean := bigBlobResult(t, 1<<20)
	bad := resultJSON(t, map[string]any{"content": []any{map[string]any{"type": "text",
		"text": strings.Repeat("Lorem ipsum dolor sit amet. ", 40000) + resultAttack}}})
	big := bigBlobResult(t, 4<<20) // over the bound: screened alone
	var wg sync.WaitGroup
	found := make([]int, 12)
	for i := range found {
		wg.Go(func() {
			v := clean
			switch i % 4 {
			case 0:
				v = bad
			case 1:
				v = big
			}
			found[i] = len(DetectInjectionInResult(v))
		})
	}
	wg.Wait()
	if peak := screening.peakHeld(); peak > limit+smallResult {
		t.Errorf("%d bytes screened at once, over the bound of %d", peak, limit)
	}
	for i, n := range found {
		if want := i%4 == 0; (n > 0) != want {
			t.Errorf("result %d: %d findings, want findings %v", i, n, want)
		}
	}
}

// TestSmallResultNotHeldUp: a small result is read at once, even when
// large ones fill the bound (an upstream flooding them), not after them.
func TestSmallResultNotHeldUp(t *testing.T) {
	old := screening
	screening = newScreenBudget(3 << 20)
	t.Cleanup(func() { screening = old })
	n := screening.acquire(3 << 20) // the bound, full
	defer screening.release(n)
	done := make(chan int)
	go func() {
		done <- len(DetectInjectionInResult(resultJSON(t, map[string]any{"content": []any{map[string]any{"type": "text", "text": resultAttack}}})))
	}()
	select {
	case got := <-done:
		if got == 0 {
			t.Error("the injection in a small result was not found")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a small result waited for room the large ones hold")
	}
}

// TestBlobDecodeAllocatesOnce: a text blob is decoded into one buffer of
// its decoded size, not copied three times (the base64 cleaned, decoded,
// then made a string: ~3.3 times the decoded size).
func TestBlobDecodeAllocatesOnce(t *testing.T) {
	raw := string(bigBlobResult(t, 8<<20))
	raw = raw[strings.Index(raw, `"blob":"`)+8:]
	raw = raw[:strings.IndexByte(raw, '"')]
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	text, ok := decodeBlob(raw, true)
	runtime.ReadMemStats(&after)
	if !ok || len(text) != 8<<20 {
		t.Fatalf("decoded %d bytes, ok %v", len(text), ok)
	}
	if got := after.TotalAlloc - before.TotalAlloc; got > 9<<20 {
		t.Errorf("decoding an 8 MiB blob allocated %d bytes, want at most 9 MiB", got)
	}
}

// TestAttackLargeResultNotStarved: a result as large as the bound waits
// for the large ones screened before it, not for every small one: small
// results keep arriving (one is always being read) and the large one
// still gets its turn, where it waited for none to be read at all.
func TestAttackLargeResultNotStarved(t *testing.T) {
	b := newScreenBudget(3 << 20)
	small := b.acquire(smallResult) // one always being read
	defer b.release(small)
	done := make(chan int64)
	go func() { done <- b.acquire(8 << 20) }()
	select {
	case n := <-done:
		b.release(n)
	case <-time.After(10 * time.Second):
		t.Fatal("a large result waited for small ones, which never stop arriving")
	}
}

// TestAttackLargeResultKeepsItsTurn: results that fit in the room left
// do not pass one waiting for more room (a stream of 1 MiB results
// would keep a 3 MiB one waiting for ever): they wait behind it.
func TestAttackLargeResultKeepsItsTurn(t *testing.T) {
	b := newScreenBudget(3 << 20)
	first := b.acquire(2 << 20)
	order := make(chan string, 2)
	big := make(chan int64)
	go func() { n := b.acquire(3 << 20); order <- "large"; big <- n }()
	for b.waiting() == 0 { // the large one is waiting its turn
		runtime.Gosched()
	}
	mid := make(chan int64)
	go func() { n := b.acquire(1 << 20); order <- "1 MiB"; mid <- n }()
	for b.waiting() < 2 {
		select {
		case <-order:
			t.Fatal("a 1 MiB result passed the large one waiting before it")
		default:
			runtime.Gosched()
		}
	}
	b.release(first)
	if got := <-order; got != "large" {
		t.Fatalf("%s read first, want the large result waiting longer", got)
	}
	b.release(<-big)
	b.release(<-mid)
}
