package throttle

import (
	"fmt"
	"testing"
	"time"
)

func TestKeys(t *testing.T) {
	for _, tt := range []struct{ addr, client, guesser string }{
		{"203.0.113.7:1234", "203.0.113.7", "203.0.113.7"},
		{"0.0.0.0:0", "0.0.0.0", "0.0.0.0"},
		{"255.255.255.255:65535", "255.255.255.255", "255.255.255.255"},
		{"203.0.113.007:1", "203.0.113.007:1", "203.0.113.007:1"}, // not an address: as it is
		{"127.0.0.1:1", "127.0.0.1", "loopback"},
		{"127.0.0.42:1", "127.0.0.42", "loopback"},
		{"[::1]:1", "::/64", "loopback"},
		{"[::ffff:127.0.0.2]:1", "127.0.0.2", "loopback"},
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
