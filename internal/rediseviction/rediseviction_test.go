package rediseviction

import (
	"context"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/internal/deadpeer"
	"github.com/sluicehq/sluice/internal/redistest"
)

// TestPolicy: a server that may evict is told from one that may not, also
// for a user whose ACL forbids CONFIG (as managed services do): INFO
// memory says the same. Attack: such a server, with the managed services'
// default volatile-lru, was taken as not evicting, and route memory and
// spent buckets, whose keys have a TTL, could be evicted under memory
// pressure: a sink allowed after a forgotten source, a bucket full again.
func TestPolicy(t *testing.T) {
	srv := redistest.Start(t)
	ctx := context.Background()
	admin := redis.NewClient(&redis.Options{Network: "unix", Addr: srv.Socket})
	defer admin.Close()
	if err := admin.Do(ctx, "ACL", "SETUSER", "managed", "on", ">pw", "~*", "&*", "+@all", "-config").Err(); err != nil {
		t.Fatal(err)
	}
	managed := redis.NewClient(&redis.Options{Network: "unix", Addr: srv.Socket, Username: "managed", Password: "pw"})
	defer managed.Close()
	if err := managed.ConfigGet(ctx, "maxmemory").Err(); err == nil {
		t.Fatal("CONFIG GET allowed to a user whose ACL forbids it")
	}
	for _, tc := range []struct {
		policy, maxmemory string
		evicts            bool
	}{
		{"noeviction", "100mb", false},
		{"volatile-lru", "0", false},
		{"volatile-lru", "100mb", true},
		{"allkeys-lru", "100mb", true},
	} {
		for k, v := range map[string]string{"maxmemory-policy": tc.policy, "maxmemory": tc.maxmemory} {
			if err := admin.ConfigSet(ctx, k, v).Err(); err != nil {
				t.Fatal(err)
			}
		}
		for name, c := range map[string]*redis.Client{"CONFIG allowed": admin, "CONFIG forbidden": managed} {
			p, _, evicts, err := Policy(ctx, c)
			if err != nil || evicts != tc.evicts || (evicts && p != tc.policy) {
				t.Errorf("%s, %s with maxmemory %s: got %q, %v, %v; want evicts %v", name, tc.policy, tc.maxmemory, p, evicts, err, tc.evicts)
			}
		}
	}
}

// TestPolicyServerNotAnswering: a server that accepts the connection and
// never answers is an error, not a server refusing CONFIG and INFO, which
// is not checked: a Redis stalled while the gateway started passed the
// check whatever its policy, and route memory and spent buckets went on a
// server that may evict them. One that refuses both commands (its ACL)
// is still not checked.
func TestPolicyServerNotAnswering(t *testing.T) {
	c := redis.NewClient(&redis.Options{Addr: deadpeer.Silent(t), ReadTimeout: 100 * time.Millisecond, MaxRetries: -1, Protocol: 2})
	defer c.Close()
	_, _, evicts, err := Policy(context.Background(), c)
	if err == nil {
		t.Fatalf("a server that does not answer: got evicts %v and no error, want an error", evicts)
	}

	srv := redistest.Start(t)
	ctx := context.Background()
	admin := redis.NewClient(&redis.Options{Network: "unix", Addr: srv.Socket})
	defer admin.Close()
	if err := admin.Do(ctx, "ACL", "SETUSER", "locked", "on", ">pw", "~*", "&*", "+@all", "-config", "-info").Err(); err != nil {
		t.Fatal(err)
	}
	locked := redis.NewClient(&redis.Options{Network: "unix", Addr: srv.Socket, Username: "locked", Password: "pw"})
	defer locked.Close()
	if _, _, evicts, err := Policy(ctx, locked); err != nil || evicts {
		t.Errorf("a server refusing CONFIG and INFO: got evicts %v, %v; want it not checked (false, nil)", evicts, err)
	}
}

// TestPolicyServerBusy: a Redis busy running a script (another client's
// EVAL past busy-reply-threshold) answers CONFIG GET and INFO with a BUSY
// error reply. That is a server that cannot answer now, not one whose ACL
// forbids the commands: an error, not a server left unchecked. Attack:
// with a long script running as the gateway started, a Redis with
// allkeys-lru and maxmemory passed the check, and route memory and spent
// buckets went on a server that may evict them.
func TestPolicyServerBusy(t *testing.T) {
	srv := redistest.Start(t)
	ctx := context.Background()
	admin := redis.NewClient(&redis.Options{Network: "unix", Addr: srv.Socket, MaxRetries: -1})
	defer admin.Close()
	for k, v := range map[string]string{"maxmemory-policy": "allkeys-lru", "maxmemory": "100mb", "busy-reply-threshold": "10"} {
		if err := admin.ConfigSet(ctx, k, v).Err(); err != nil {
			t.Fatal(err)
		}
	}
	// The script runs until SCRIPT KILL, sent on a connection of its own.
	script, err := net.Dial("unix", srv.Socket)
	if err != nil {
		t.Fatal(err)
	}
	defer script.Close()
	if _, err := fmt.Fprint(script, "EVAL \"while true do end\" 0\r\n"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = admin.Do(context.Background(), "SCRIPT", "KILL").Err() })
	deadline := time.Now().Add(5 * time.Second)
	for {
		err := admin.Ping(ctx).Err()
		if err != nil && strings.HasPrefix(err.Error(), "BUSY") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the server is not busy with the script: PING got %v", err)
		}
	}

	c := redis.NewClient(&redis.Options{Network: "unix", Addr: srv.Socket, MaxRetries: -1})
	defer c.Close()
	p, mm, evicts, err := Policy(ctx, c)
	if err == nil {
		t.Fatalf("a server busy with a script: got %q, %q, evicts %v and no error, want an error", p, mm, evicts)
	}
	if !strings.Contains(err.Error(), "BUSY") {
		t.Errorf("got error %v, want it to say the server is busy", err)
	}
}
