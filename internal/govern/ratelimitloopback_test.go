package govern

import (
	"testing"

	"github.com/sluicehq/sluice/internal/throttle"
)

// TestRateClientLoopback: every loopback address is one client under a
// rule by client, IPv6's too. The gateway counts an IPv6 peer by its /64
// (throttle.Client), so [::1] came as "::/64", which is no address: a
// local agent had a bucket as 127.0.0.1 and another as ::1.
func TestRateClientLoopback(t *testing.T) {
	for _, peer := range []string{"127.0.0.1:5", "127.0.3.9:5", "[::1]:5", "[::ffff:127.0.0.1]:5"} {
		if got := rateClient(throttle.Client(peer)); got != "loopback" {
			t.Errorf("rateClient of %s (%q) = %q, want loopback", peer, throttle.Client(peer), got)
		}
	}
	for _, peer := range []string{"192.0.2.1:5", "[2001:db8::1]:5", "[fe80::1]:5"} {
		if got, want := rateClient(throttle.Client(peer)), throttle.Client(peer); got != want {
			t.Errorf("rateClient of %s = %q, want %q", peer, got, want)
		}
	}
}
