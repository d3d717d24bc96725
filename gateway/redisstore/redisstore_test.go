package redisstore

import (
	"errors"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/internal/redistest"
)

// TestStore: against a real redis-server, a session's memory keeps at
// most max calls (the first remembered forgotten first) for at most their
// TTL, gives each once, and only to its own session; an id held for one
// exchange is not held for another until released by the first (a
// release with another token lets go of nothing); an id remembered is
// not held for a new exchange until taken or past its TTL (then holding
// it forgets it); a take holds the id for the taker.
func TestStore(t *testing.T) {
	s, c := newTestStore(t)
	ctx := t.Context()

	calls := map[string][]byte{}
	for i := range 4 {
		calls[strconv.Itoa(i)] = []byte("call " + strconv.Itoa(i))
	}
	if n, err := s.Remember(ctx, "s1", calls, 5, time.Minute); n != 0 || err != nil {
		t.Fatalf("remember 4 of at most 5: forgot %d, %v", n, err)
	}
	if n, err := s.Remember(ctx, "s1", map[string][]byte{"late": []byte("late"), "later": []byte("later")}, 5, time.Minute); n != 1 || err != nil {
		t.Errorf("remember 2 more: forgot %d, %v; want 1", n, err)
	}
	if _, ok, _ := s.Take(ctx, "s2", "late", "", time.Minute); ok {
		t.Error("another session took s1's call")
	}
	if v, ok, err := s.Take(ctx, "s1", "late", "", time.Minute); !ok || err != nil || string(v) != "late" {
		t.Errorf("take: got %q %v %v, want late", v, ok, err)
	}
	if _, ok, _ := s.Take(ctx, "s1", "late", "", time.Minute); ok {
		t.Error("taken twice")
	}

	long := strings.Repeat("x", 200) // a client's id, hashed in keys
	// A request whose stream broke off, which the upstream may yet
	// answer: its id is refused to a new request.
	if held, err := s.Hold(ctx, "s1", "A", []string{long, "1"}, time.Minute); held != "1" || err != nil {
		t.Errorf("hold of a remembered id: got %q %v, want it refused", held, err)
	}
	if v, ok, _ := s.Take(ctx, "s1", "3", "", time.Minute); !ok || string(v) != "call 3" {
		t.Errorf("take: got %q %v, want call 3", v, ok)
	}
	// Past its TTL (set to one gone: Redis's clock), no longer.
	c.ZAdd(ctx, s.base("s1")+"o", redis.Z{Score: 1, Member: "1"})
	if held, err := s.Hold(ctx, "s1", "A", []string{"1", long}, time.Minute); held != "" || err != nil {
		t.Fatalf("hold: %q %v", held, err)
	}
	if _, ok, _ := s.Take(ctx, "s1", "1", "", time.Minute); ok {
		t.Error("an id held anew: the call remembered for it is still there")
	}
	if held, _ := s.Hold(ctx, "s1", "B", []string{"9", long}, time.Minute); held != long {
		t.Errorf("hold of an id held for another: got %q, want it refused", held)
	}
	if held, _ := s.Hold(ctx, "s1", "B", []string{"9"}, time.Minute); held != "" {
		t.Errorf("a refused hold held %q: want nothing held", held)
	}
	if err := s.Release(ctx, "s1", "B", []string{long}); err != nil {
		t.Fatal(err)
	}
	if held, _ := s.Hold(ctx, "s1", "C", []string{long}, time.Minute); held != long {
		t.Error("a release with another token let go of the id")
	}
	if held, _ := s.Hold(ctx, "s1", "A", []string{"1", long}, time.Minute); held != "" {
		t.Errorf("renewing for the same token: refused for %q", held)
	}
	s.Release(ctx, "s1", "A", []string{"1", long})
	if held, _ := s.Hold(ctx, "s1", "C", []string{long}, time.Minute); held != "" {
		t.Errorf("once released: refused for %q", held)
	}

	if _, ok, _ := s.Take(ctx, "s1", "2", "G", time.Minute); !ok {
		t.Fatal("take for a resumed stream: nothing")
	}
	if held, _ := s.Hold(ctx, "s1", "D", []string{"2"}, time.Minute); held != "2" {
		t.Error("an id a resumed stream took is not held for it")
	}

	if _, err := s.Remember(ctx, "s3", map[string][]byte{"x": []byte("x")}, 5, time.Minute); err != nil {
		t.Fatal(err)
	}
	// Its TTL past by Redis's clock, which the test cannot move: its
	// time to be forgotten is set to one gone.
	c.ZAdd(ctx, s.base("s3")+"o", redis.Z{Score: 1, Member: "x"})
	if _, ok, _ := s.Take(ctx, "s3", "x", "", time.Minute); ok {
		t.Error("past its TTL: still remembered")
	}
	if ttl := c.PTTL(ctx, s.base("s1")+"w:2").Val(); ttl <= 0 || ttl > time.Minute {
		t.Errorf("a hold's expiry: %v, want within its TTL", ttl)
	}
}

// TestHeldCalls: a held call's record gives its approval to the first
// cancellation only, marked cancelled, which its holder then sees when
// it renews it; a record is one session's, released by its own approval
// only, and lapses after its TTL.
func TestHeldCalls(t *testing.T) {
	s, c := newTestStore(t)
	ctx := t.Context()

	long := strings.Repeat("x", 200)
	for _, id := range []string{"7", long} {
		if cancelled, err := s.HoldCall(ctx, "s1", id, "ap-"+id[:1], time.Minute, false); cancelled || err != nil {
			t.Fatalf("hold %.8s: %v %v", id, cancelled, err)
		}
	}
	if got, err := s.CancelCalls(ctx, "s2", []string{"7"}); err != nil || got[0] != "" {
		t.Errorf("cancel in another session: got %q %v, want nothing held", got, err)
	}
	got, err := s.CancelCalls(ctx, "s1", []string{"9", "7", long})
	if err != nil || len(got) != 3 || got[0] != "" || got[1] != "ap-7" || got[2] != "ap-x" {
		t.Fatalf("cancel: got %q %v, want [\"\" ap-7 ap-x]", got, err)
	}
	if got, _ := s.CancelCalls(ctx, "s1", []string{"7"}); got[0] != "" {
		t.Errorf("cancelled twice: got %q the second time, want nothing", got)
	}
	if cancelled, err := s.HoldCall(ctx, "s1", "7", "ap-7", time.Minute, true); !cancelled || err != nil {
		t.Errorf("renewing a cancelled hold: %v %v, want it cancelled", cancelled, err)
	}
	if ttl := c.PTTL(ctx, s.base("s1")+"a:7").Val(); ttl <= 0 || ttl > time.Minute {
		t.Errorf("a held call's record expires in %v, want within its TTL", ttl)
	}
	if _, err := s.ReleaseCall(ctx, "s1", "7", "ap-other"); !errors.Is(err, ErrNotHeld) {
		t.Errorf("released under another approval: got %v, want ErrNotHeld", err)
	}
	if c.Exists(ctx, s.base("s1")+"a:7").Val() != 1 {
		t.Error("released under another approval")
	}
	if cancelled, err := s.ReleaseCall(ctx, "s1", "7", "ap-7"); !cancelled || err != nil {
		t.Errorf("releasing a cancelled hold: %v %v, want it cancelled", cancelled, err)
	}
	if c.Exists(ctx, s.base("s1")+"a:7").Val() != 0 {
		t.Error("a cancelled record stays after its release")
	}
	// Held anew under the same id: not cancelled, nor released so.
	if cancelled, _ := s.HoldCall(ctx, "s1", "7", "ap-8", time.Minute, false); cancelled {
		t.Error("held anew: cancelled")
	}
	if cancelled, err := s.ReleaseCall(ctx, "s1", "7", "ap-8"); cancelled || err != nil {
		t.Errorf("releasing a hold not cancelled: %v %v, want it not cancelled", cancelled, err)
	}
	if _, err := s.ReleaseCall(ctx, "s1", "7", "ap-8"); !errors.Is(err, ErrNotHeld) {
		t.Errorf("released twice: got %v, want ErrNotHeld (a lost record cannot tell a cancellation)", err)
	}
	// A renewal finding no record writes none: written again, it would
	// hide a cancellation that found nothing meanwhile.
	if s.HoldCall(ctx, "s1", "7", "ap-9", time.Minute, false); c.Del(ctx, s.base("s1")+"a:7").Val() != 1 {
		t.Fatal("the record to lose is not there")
	}
	_, err = s.HoldCall(ctx, "s1", "7", "ap-9", time.Minute, true)
	if l, ok := err.(interface{ HoldLost() bool }); !errors.Is(err, ErrNotHeld) || !ok || !l.HoldLost() {
		t.Errorf("renewing a lost record: got %v, want ErrNotHeld saying HoldLost", err)
	}
	if c.Exists(ctx, s.base("s1")+"a:7").Val() != 0 {
		t.Error("a renewal wrote a lost record again")
	}
}

// TestCancelBeforeHold: a cancellation of an id not held marks it
// cancelled for CancelMarkTTL; the hold recorded after is cancelled at
// once (and released so), and the mark gives no approval to another
// cancellation, nor is it renewed as a hold.
func TestCancelBeforeHold(t *testing.T) {
	s, c := newTestStore(t)
	ctx := t.Context()
	if got, err := s.CancelCalls(ctx, "s1", []string{"5", "6"}); err != nil || got[0] != "" || got[1] != "" {
		t.Fatalf("cancel of ids not held: got %q %v, want nothing held", got, err)
	}
	if ttl := c.PTTL(ctx, s.base("s1")+"a:5").Val(); ttl <= 0 || ttl > CancelMarkTTL {
		t.Errorf("the mark expires in %v, want within %v", ttl, CancelMarkTTL)
	}
	if got, _ := s.CancelCalls(ctx, "s1", []string{"5"}); got[0] != "" {
		t.Errorf("cancelled again: got %q, want nothing", got)
	}
	if _, err := s.HoldCall(ctx, "s1", "6", "ap-6", time.Minute, true); !errors.Is(err, ErrNotHeld) {
		t.Errorf("renewing a mark: got %v, want ErrNotHeld", err)
	}
	if cancelled, err := s.HoldCall(ctx, "s1", "5", "ap-5", time.Minute, false); !cancelled || err != nil {
		t.Fatalf("holding a cancelled id: %v %v, want it cancelled", cancelled, err)
	}
	if ttl := c.PTTL(ctx, s.base("s1")+"a:5").Val(); ttl <= CancelMarkTTL || ttl > time.Minute {
		t.Errorf("the cancelled hold's record expires in %v, want within its TTL", ttl)
	}
	if cancelled, err := s.ReleaseCall(ctx, "s1", "5", "ap-5"); !cancelled || err != nil {
		t.Errorf("releasing it: %v %v, want it cancelled", cancelled, err)
	}
	if cancelled, err := s.HoldCall(ctx, "s2", "5", "ap-7", time.Minute, false); cancelled || err != nil {
		t.Errorf("the same id in another session: %v %v, want it held", cancelled, err)
	}
}

// newTestStore is a Store on a fresh redis-server, keys prefixed test:,
// and its client.
func newTestStore(t *testing.T) (*Store, *redis.Client) {
	t.Helper()
	srv := redistest.Start(t)
	opt, err := redis.ParseURL(srv.URL())
	if err != nil {
		t.Fatal(err)
	}
	c := redis.NewClient(opt)
	t.Cleanup(func() { c.Close() })
	return New(c, Options{KeyPrefix: "test:"}), c
}

// TestCancelSession: the end of a session cancels each call of it held
// (its approval returned once, a renewal and the release then find it
// cancelled), and a hold recorded after it, for CancelMarkTTL; another
// session's calls are not touched.
func TestCancelSession(t *testing.T) {
	s, c := newTestStore(t)
	ctx := t.Context()
	long := strings.Repeat("x", 100)
	for _, id := range []string{"7", long, "8"} {
		if cancelled, err := s.HoldCall(ctx, "s1", id, "ap-"+id[:1], time.Minute, false); cancelled || err != nil {
			t.Fatalf("hold %.8s: %v %v", id, cancelled, err)
		}
	}
	if _, err := s.ReleaseCall(ctx, "s1", "8", "ap-8"); err != nil {
		t.Fatal(err)
	}
	if cancelled, err := s.HoldCall(ctx, "s2", "7", "ap-other", time.Minute, false); cancelled || err != nil {
		t.Fatalf("hold in another session: %v %v", cancelled, err)
	}
	got, err := s.CancelSession(ctx, "s1")
	slices.Sort(got)
	if err != nil || !slices.Equal(got, []string{"ap-7", "ap-x"}) {
		t.Fatalf("end: got %q %v, want [ap-7 ap-x]", got, err)
	}
	if got, err := s.CancelSession(ctx, "s1"); err != nil || len(got) != 0 {
		t.Errorf("ended twice: got %q %v the second time, want nothing", got, err)
	}
	if cancelled, err := s.HoldCall(ctx, "s1", "7", "ap-7", time.Minute, true); !cancelled || err != nil {
		t.Errorf("renewing a hold of the ended session: %v %v, want it cancelled", cancelled, err)
	}
	if cancelled, err := s.ReleaseCall(ctx, "s1", long, "ap-x"); !cancelled || err != nil {
		t.Errorf("releasing a hold of the ended session: %v %v, want it cancelled", cancelled, err)
	}
	if cancelled, err := s.HoldCall(ctx, "s1", "9", "ap-9", time.Minute, false); !cancelled || err != nil {
		t.Errorf("holding a call of the ended session: %v %v, want it cancelled", cancelled, err)
	}
	if ttl := c.PTTL(ctx, s.base("s1")+"x").Val(); ttl <= 0 || ttl > CancelMarkTTL {
		t.Errorf("the end mark expires in %v, want within %v", ttl, CancelMarkTTL)
	}
	if cancelled, err := s.ReleaseCall(ctx, "s2", "7", "ap-other"); cancelled || err != nil {
		t.Errorf("another session's call: %v %v, want it held", cancelled, err)
	}
}

// TestSessionEnds: against a real redis-server, a session ended is
// reported ended, to any Store on the server, its key expiring when the
// id does; a session never ended is not; the key names the session by
// its hash, not its id.
func TestSessionEnds(t *testing.T) {
	s, c := newTestStore(t)
	ctx := t.Context()
	other := New(c, Options{KeyPrefix: "test:"})
	if err := s.EndSession(ctx, "s2.sealed", time.Hour); err != nil {
		t.Fatal(err)
	}
	if ended, err := other.SessionEnded(ctx, "s2.sealed"); !ended || err != nil {
		t.Errorf("the ended session through another store: %v %v, want ended", ended, err)
	}
	if ended, err := other.SessionEnded(ctx, "s2.other"); ended || err != nil {
		t.Errorf("a session never ended: %v %v, want not", ended, err)
	}
	keys, err := c.Keys(ctx, "*").Result()
	if err != nil || len(keys) != 1 || strings.Contains(keys[0], "sealed") {
		t.Fatalf("keys: %q %v, want one, not naming the id", keys, err)
	}
	if ttl := c.PTTL(ctx, keys[0]).Val(); ttl <= 0 || ttl > time.Hour {
		t.Errorf("the end's TTL: %v, want at most the id's lifetime", ttl)
	}
	if err := s.EndSession(ctx, "s2.forever", 0); err != nil {
		t.Fatal(err)
	}
	if ended, _ := s.SessionEnded(ctx, "s2.forever"); !ended {
		t.Error("a session ended with no TTL (no maximum age): not ended")
	}
}
