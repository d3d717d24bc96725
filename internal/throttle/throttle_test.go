package throttle

import (
	"fmt"
	"net/netip"
	"strings"
	"testing"
	"time"
)

func TestKeys(t *testing.T) {
	for _, tt := range []struct{ addr, client, guesser string }{
		{"203.0.113.7:1234", "203.0.113.7", "203.0.113.7"},
		{"0.0.0.0:0", "0.0.0.0", "0.0.0.0"},
		{"255.255.255.255:65535", "255.255.255.255", "255.255.255.255"},
		{"203.0.113.007:1", "203.0.113.007:1", "203.0.113.007:1"}, // not an address: as it is
		{"127.0.0.1:1", "loopback", "loopback"},
		{"127.0.0.42:1", "loopback", "loopback"},
		{"127.255.255.254:1", "loopback", "loopback"},
		{"[::1]:1", "loopback", "loopback"},
		{"[::ffff:127.0.0.2]:1", "loopback", "loopback"},
		{"[::2]:1", "::/64", "::/64"},
		{"128.0.0.1:1", "128.0.0.1", "128.0.0.1"},
		{"[2001:db8:1:2:3:4:5:6]:1", "2001:db8:1:2::/64", "2001:db8:1:2::/64"},
	} {
		if got := Client(tt.addr); got != tt.client {
			t.Errorf("Client(%s) = %s, want %s", tt.addr, got, tt.client)
		}
		if got := Guesser(tt.addr); got != tt.guesser {
			t.Errorf("Guesser(%s) = %s, want %s", tt.addr, got, tt.guesser)
		}
	}
}

// The IPv4 client of every request is the address as written: no string
// is made for it.
func TestClientIPv4Allocs(t *testing.T) {
	if n := testing.AllocsPerRun(100, func() { _ = Client("203.0.113.7:1234") }); n != 0 {
		t.Errorf("Client allocates %v times, want 0", n)
	}
}

// A full table of counts from this minute sends newcomers to one shared
// slot, except loopback; counts older than a minute make room.
func TestSlot(t *testing.T) {
	now := time.Unix(1e9, 0)
	m := map[string]*time.Time{}
	since := func(f *time.Time) time.Time { return *f }
	for i := range MaxCounted {
		k := fmt.Sprint(i)
		m[Slot(m, k, now, since)] = &now
	}
	if got := Slot(m, "new", now, since); got == "new" {
		t.Error("a newcomer to a full table got its own slot")
	}
	if got := Slot(m, "loopback", now, since); got != "loopback" {
		t.Errorf("loopback got %q", got)
	}
	if got := Slot(m, "7", now, since); got != "7" {
		t.Errorf("a client already counted got %q", got)
	}
	if got := Slot(m, "new", now.Add(2*time.Minute), since); got != "new" || len(m) != 0 {
		t.Errorf("after a minute: slot %q, %d counts left", got, len(m))
	}
}

// Behind believes X-Forwarded-For only from a trusted proxy, and from it
// only the last address that is not a trusted proxy: what a client
// writes into the header itself (before its proxy's append) is never
// its key.
func TestBehind(t *testing.T) {
	trusted := []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("2001:db8:ffff::/48")}
	hops := make([]string, MaxForwardHops+1)
	for i := range hops {
		hops[i] = fmt.Sprintf("10.0.0.%d", i+1)
	}
	for _, tt := range []struct {
		peer string
		xff  []string
		want string
	}{
		{"10.0.0.1:5", []string{"203.0.113.7"}, "203.0.113.7"},
		{"10.0.0.1:5", []string{"203.0.113.7:4711"}, "203.0.113.7"},
		{"10.0.0.1:5", []string{"[2001:db8:1:2::9]:4711"}, "2001:db8:1:2::/64"},
		{"10.0.0.1:5", []string{"2001:db8:1:2::9"}, "2001:db8:1:2::/64"},
		// The client's own claim comes first; its proxy appends the truth.
		{"10.0.0.1:5", []string{"198.51.100.1, 203.0.113.7"}, "203.0.113.7"},
		{"10.0.0.1:5", []string{"198.51.100.1", "203.0.113.7"}, "203.0.113.7"},
		// Two proxies of ours: the one before them is the client.
		{"10.0.0.1:5", []string{"198.51.100.1, 203.0.113.7, 10.9.9.9"}, "203.0.113.7"},
		{"[::ffff:10.0.0.1]:5", []string{"203.0.113.7"}, "203.0.113.7"},
		// Not from a trusted proxy: the header is the client's word.
		{"203.0.113.9:5", []string{"198.51.100.1"}, "203.0.113.9"},
		{"[2001:db8:2::1]:5", []string{"198.51.100.1"}, "2001:db8:2::/64"},
		// Missing or malformed: the last trusted hop.
		{"10.0.0.1:5", nil, "10.0.0.1"},
		{"10.0.0.1:5", []string{""}, "10.0.0.1"},
		{"10.0.0.1:5", []string{"unknown"}, "10.0.0.1"},
		{"10.0.0.1:5", []string{"203.0.113.7, garbage, 10.2.2.2"}, "10.2.2.2"},
		{"10.0.0.1:5", []string{"203.0.113.7,,"}, "10.0.0.1"},
		{"10.0.0.1:5", []string{"fe80::1%eth0"}, "10.0.0.1"},
		// Only trusted hops: the first of them.
		{"10.0.0.1:5", []string{"10.1.1.1, 10.2.2.2"}, "10.1.1.1"},
		{"10.0.0.1:5", []string{"203.0.113.7, " + strings.Join(hops, ", ")}, "10.0.0.2"},
	} {
		if got := Behind(tt.peer, tt.xff, trusted); got != tt.want {
			t.Errorf("Behind(%s, %q) = %s, want %s", tt.peer, tt.xff, got, tt.want)
		}
	}
	for _, tt := range []struct {
		peer string
		xff  []string
		want string
	}{
		{"10.0.0.1:5", []string{"198.51.100.1, 203.0.113.7"}, "203.0.113.7"},
		{"10.0.0.1:5", []string{"127.0.0.9"}, "loopback"},
		{"127.0.0.2:5", []string{"203.0.113.7"}, "loopback"},
	} {
		if got := GuesserBehind(tt.peer, tt.xff, trusted); got != tt.want {
			t.Errorf("GuesserBehind(%s, %q) = %s, want %s", tt.peer, tt.xff, got, tt.want)
		}
	}
	for _, tt := range [][3]string{
		{"10.0.0.1:5", "198.51.100.1, 2001:db8:1:2::9", "2001:db8:1:2::9"},
		{"10.0.0.1:5", "garbage", "10.0.0.1"},
		{"203.0.113.9:5", "198.51.100.1", "203.0.113.9:5"},
	} {
		if got := Forwarded(tt[0], []string{tt[1]}, trusted); got != tt[2] {
			t.Errorf("Forwarded(%s, %q) = %s, want %s", tt[0], tt[1], got, tt[2])
		}
	}
	if got := Behind("10.0.0.1:5", []string{"203.0.113.7"}, nil); got != "10.0.0.1" {
		t.Errorf("with no trusted proxies: %s, want the peer", got)
	}
}

// With no trusted proxies, Behind costs what Client does.
func TestBehindNoProxyAllocs(t *testing.T) {
	if n := testing.AllocsPerRun(100, func() { _ = Behind("203.0.113.7:1234", []string{"198.51.100.1"}, nil) }); n != 0 {
		t.Errorf("Behind allocates %v times, want 0", n)
	}
}

// Via keys the trusted proxy a request came through, whatever client it
// names, loopback as one; nothing for any other peer.
func TestVia(t *testing.T) {
	trusted := []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("127.0.0.0/8")}
	for _, tt := range []struct{ peer, want string }{
		{"10.0.0.1:5", "\x00via 10.0.0.1"},
		{"[::ffff:10.0.0.1]:5", "\x00via 10.0.0.1"},
		{"127.0.0.2:5", "\x00via loopback"},
		{"203.0.113.7:5", ""},
		{"not an address", ""},
	} {
		if got := Via(tt.peer, trusted); got != tt.want {
			t.Errorf("Via(%s) = %q, want %q", tt.peer, got, tt.want)
		}
	}
	if got := Via("10.0.0.1:5", nil); got != "" {
		t.Errorf("with no trusted proxies: %q, want none", got)
	}
}
