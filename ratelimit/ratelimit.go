// Package ratelimit keeps token buckets by key: in the process (Local), or
// in Redis (Redis) so that every replica of the gateway draws from the same
// bucket. It knows nothing of calls; internal/govern decides which buckets
// a call takes from, and for which agent (the bucket's Owner).
//
// Either store is bounded, and never forgets a bucket that is not full:
// a full bucket is as good as none, but dropping a spent one would hand
// it back full. When an owner's share is all spent buckets, a Take that
// needs a new one is refused (Result.TableFull) until one is full again.
//
//	l := ratelimit.NewLocal(ratelimit.LocalOptions{})
//	res, err := l.Take(ctx, ratelimit.Bucket{Key: "per-agent|5:alice", Owner: "alice", Limit: lim})
//	if err != nil || !res.Allowed {
//		// refuse; res.RetryAfter says when to try again
//	}
package ratelimit

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Limit is a token bucket: Rate tokens per Per, holding at most Burst.
type Limit struct {
	Rate  int
	Per   time.Duration
	Burst int
}

// ParseLimit reads "N/s", "N/m" or "N/h" (also "N/second", "N/minute",
// "N/hour", or "N/<duration>" such as "N/10s"). burst 0 means Rate.
func ParseLimit(s string, burst int) (Limit, error) {
	n, per, ok := strings.Cut(strings.TrimSpace(s), "/")
	if !ok {
		return Limit{}, fmt.Errorf("rate %q: want N/s, N/m, N/h or N/<duration>", s)
	}
	r, err := strconv.Atoi(strings.TrimSpace(n))
	if err != nil || r < 1 {
		return Limit{}, fmt.Errorf("rate %q: %q is not a positive whole number", s, n)
	}
	l := Limit{Rate: r, Burst: burst}
	switch per = strings.TrimSpace(per); per {
	case "s", "sec", "second":
		l.Per = time.Second
	case "m", "min", "minute":
		l.Per = time.Minute
	case "h", "hour":
		l.Per = time.Hour
	default:
		d, err := time.ParseDuration(per)
		if err != nil || d <= 0 {
			return Limit{}, fmt.Errorf("rate %q: %q is not s, m, h or a positive duration", s, per)
		}
		l.Per = d
	}
	if l.Burst == 0 {
		l.Burst = l.Rate
	}
	if l.Burst < 1 {
		return Limit{}, fmt.Errorf("burst %d: give at least 1, or 0 for the rate", burst)
	}
	return l, nil
}

func (l Limit) String() string {
	return fmt.Sprintf("%d per %s (burst %d)", l.Rate, l.Per, l.Burst)
}

// Result is what one Take found.
type Result struct {
	Allowed bool
	// RetryAfter is how long until a token is free, when not Allowed.
	RetryAfter time.Duration
	// TableFull, when not Allowed, says the bucket was not found and could
	// not be made: its owner (or, in process, the whole store) already
	// holds as many buckets as it may, every one of them spent. Forgetting
	// one would give it back full, so the call is refused instead;
	// RetryAfter is when the first of them is full again and can go.
	TableFull bool
}

// Bucket names a token bucket and says whom it is for.
type Bucket struct {
	// Key names the bucket: Takes with the same Key draw from one bucket.
	Key string
	// Owner is the agent the Take is for. Buckets are bounded per owner,
	// so that an agent inventing keys fills only its own share of the
	// store. The empty owner is an owner like any other.
	Owner string
	// Limit is the bucket's rate and burst; a Take with another Limit
	// than the bucket was made with starts it again, full.
	Limit Limit
}

// A Limiter takes one token from a bucket. An error means the bucket
// could not be read: the caller decides (the gateway denies).
type Limiter interface {
	Take(ctx context.Context, b Bucket) (Result, error)
}
