package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluicehq/sluice/internal/bench"
)

// benchSessions is `sluice bench --sessions N`: it opens n 2025-era
// sessions through the Sluice child at url (initialize, then
// notifications/initialized, as a client does), leaves them idle, and
// reports the child's RSS before and after, per session; then it waits out
// the idle timeout and checks that a session opened first is gone (404)
// and reports the RSS again. The sessions come from one address with 50
// client names, so max_sessions and its per-agent and per-client bounds
// are raised to n for the run.
func benchSessions(ctx context.Context, stdout, stderr io.Writer, url string, pid, n int, idle time.Duration) error {
	client := bench.NewClient(64)
	open := func(i int) (string, error) {
		body := fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"agent-%d","version":"1"}}}`, i%50)
		resp, err := post(ctx, client, url, "", body)
		if err != nil {
			return "", err
		}
		id := resp.Header.Get("Mcp-Session-Id")
		if resp.StatusCode != http.StatusOK || id == "" {
			return "", fmt.Errorf("initialize: status %d, session id %q", resp.StatusCode, id)
		}
		resp, err = post(ctx, client, url, id, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
		if err != nil {
			return "", err
		}
		if resp.StatusCode != http.StatusAccepted {
			return "", fmt.Errorf("notifications/initialized: status %d", resp.StatusCode)
		}
		return id, nil
	}
	if _, err := open(-1); err != nil { // warm pools and lazily built state
		return err
	}
	before, err := bench.RSS(pid)
	if err != nil {
		return err
	}
	fmt.Fprintf(stderr, "opening %d sessions\n", n)
	start := time.Now()
	var (
		next  atomic.Int64
		first string
		mu    sync.Mutex
		errs  []error
		wg    sync.WaitGroup
	)
	for range 32 {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= n || ctx.Err() != nil {
					return
				}
				id, err := open(i)
				mu.Lock()
				if err != nil && len(errs) < 5 {
					errs = append(errs, err)
				}
				if i == 0 {
					first = id
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	took := time.Since(start)
	if len(errs) > 0 {
		return fmt.Errorf("bench: opening sessions: %v", errs)
	}
	after, err := bench.RSS(pid)
	if err != nil {
		return err
	}
	per := float64(after-before) / float64(n)
	fmt.Fprintf(stdout, "%d idle 2025-era sessions opened in %s (%.0f/s)\n", n, took.Round(time.Millisecond), float64(n)/took.Seconds())
	fmt.Fprintf(stdout, "Sluice RSS: %.1f MiB before, %.1f MiB with the sessions open: %.0f bytes per session (100,000 sessions: %.0f MiB)\n",
		mib(before), mib(after), per, (float64(before)+per*100_000)/(1<<20))

	// The idle timeout ends them all; the first is asked for again.
	wait := time.Until(start.Add(took).Add(idle + min(idle, 5*time.Second)))
	fmt.Fprintf(stderr, "waiting %s for session_idle_timeout (%s)\n", wait.Round(time.Second), idle)
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(wait):
	}
	resp, err := post(ctx, client, url, first, `{"jsonrpc":"2.0","id":2,"method":"ping"}`)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusNotFound {
		return fmt.Errorf("bench: a session idle for %s still answers: status %d, want 404", idle, resp.StatusCode)
	}
	reclaimed, err := bench.RSS(pid)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "after session_idle_timeout: the first session answers 404; RSS %.1f MiB (the Go runtime returns freed pages to the system gradually)\n", mib(reclaimed))
	return nil
}

// post sends one JSON-RPC message and reads the answer to the end.
func post(ctx context.Context, client *http.Client, url, session, body string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if session != "" {
		req.Header.Set("Mcp-Session-Id", session)
		req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	_, err = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp, err
}

func mib(b int64) float64 { return float64(b) / (1 << 20) }
