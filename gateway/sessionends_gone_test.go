package gateway

import (
	"context"
	"log/slog"
	"testing"

	"github.com/sluicehq/sluice/intercept"
	"github.com/sluicehq/sluice/internal/redistest"
)

// TestEndedCheckOutlivesClient: a client may send a request and hang up
// at once, to resume its answer later (Last-Event-ID). The check of a
// shared sealed session's end must not fail for the request's context
// ending then: it failed, "the shared store did not answer", the request
// was refused and never remembered for the resumption, as often as the
// hang-up beat the lookup (TestAttackSharedReplayBytesBounded, in CI
// under load). The store's own timeout bounds the lookup.
func TestEndedCheckOutlivesClient(t *testing.T) {
	store := sharedStore(t, redistest.Start(t))
	g, err := New(Options{Upstreams: []Upstream{{Name: "up", URL: "http://127.0.0.1:1"}}, SessionKeys: [][]byte{key(1)}, Exchanges: store},
		&intercept.Interceptor{}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if ended, err := g.ended(ctx, "some-session", true); ended || err != nil {
		t.Fatalf("ended with the client gone: %v, %v; want false, nil", ended, err)
	}
	if err := g.recordEnd(context.Background(), "some-session", true); err != nil {
		t.Fatal(err)
	}
	g2, err := New(Options{Upstreams: []Upstream{{Name: "up", URL: "http://127.0.0.1:1"}}, SessionKeys: [][]byte{key(1)}, Exchanges: store},
		&intercept.Interceptor{}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	if ended, err := g2.ended(ctx, "some-session", true); !ended || err != nil {
		t.Fatalf("ended through another replica, asked with the client gone: %v, %v; want true, nil", ended, err)
	}
}
