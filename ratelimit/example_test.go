package ratelimit_test

import (
	"context"
	"fmt"
	"time"

	"github.com/sluicehq/sluice/ratelimit"
)

// An agent with room for two buckets spends one, then invents names: the
// third bucket is refused, not made by forgetting the spent one.
func ExampleLocal() {
	l := ratelimit.NewLocal(ratelimit.LocalOptions{MaxKeys: 100, MaxKeysPerOwner: 2})
	ctx := context.Background()
	hour := ratelimit.Limit{Rate: 1, Per: time.Hour, Burst: 1}
	for _, key := range []string{"echo", "echo", "made_up_1", "made_up_2"} {
		r, _ := l.Take(ctx, ratelimit.Bucket{Key: key, Owner: "mallory", Limit: hour})
		fmt.Printf("%s: allowed %v, table full %v\n", key, r.Allowed, r.TableFull)
	}
	// Output:
	// echo: allowed true, table full false
	// echo: allowed false, table full false
	// made_up_1: allowed true, table full false
	// made_up_2: allowed false, table full true
}
