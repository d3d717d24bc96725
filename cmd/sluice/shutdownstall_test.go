package main

import (
	"context"
	"database/sql"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/sluicehq/sluice/audit"
	"github.com/sluicehq/sluice/internal/deadpeer"
)

// TestShutdownAuditLocked: sluice serve stops within shutdown_timeout
// (and a second for the audit store) when its event database is locked by
// another process (a sqlite3 shell in a transaction, a backup tool): the
// store's last flush waited out SQLite's 10 s busy timeout four times
// over, then once more to fold the WAL back, for every batch still
// queued; a disk that stalls held it for ever. Past the deadline the
// events still queued are given up and said lost.
func TestShutdownAuditLocked(t *testing.T) {
	r := startServe(t, "shutdown_timeout: 1s\npolicy: {default: allow}\n")
	c, _ := mcpgoSession(t, r.url, "agent")
	ctx := context.Background()
	call := func() {
		req := mcp.CallToolRequest{}
		req.Params.Name, req.Params.Arguments = "echo", map[string]any{"message": "hi"}
		if _, err := c.CallTool(ctx, req); err != nil {
			t.Fatal(err)
		}
	}
	call()

	db, err := sql.Open("sqlite", "file:"+filepath.Join(r.dir, audit.FileName)+"?_pragma=busy_timeout(10000)")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	lock, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Close()
	if _, err := lock.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
		t.Fatal(err)
	}
	defer lock.ExecContext(ctx, "ROLLBACK")
	call() // its events wait for the lock
	c.Close()

	start := time.Now()
	done := make(chan error, 1)
	go func() { done <- r.stop() }()
	select {
	case <-done:
		t.Logf("stopped after %s", time.Since(start).Round(time.Millisecond))
	case <-time.After(5 * time.Second):
		t.Fatalf("serve still running %s after its context ended, with shutdown_timeout 1s and the event database locked", time.Since(start).Round(time.Millisecond))
	}
}

// TestServeStartFailsAuditLocked: a serve that fails after opening its
// event database (here agent_tasks' Redis not answering) returns within
// shutdown_timeout of the failure when another process holds that
// database locked, and so does one stopped by a signal meanwhile: the
// audit store was closed without a deadline on that path, its WAL
// checkpoint waiting out SQLite's 10 s busy timeout (each queued batch
// as long, a stalled disk for ever), with the signal already spent.
func TestServeStartFailsAuditLocked(t *testing.T) {
	for _, signal := range []bool{false, true} {
		dir := t.TempDir()
		path := filepath.Join(dir, audit.FileName)
		st, err := audit.Open(path, audit.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if err := st.Close(); err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		db, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(10000)")
		if err != nil {
			t.Fatal(err)
		}
		lock, err := db.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := lock.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
			t.Fatal(err)
		}

		cfg, err := parseConfig("test", []byte("listen: 127.0.0.1:0\nshutdown_timeout: 1s\npolicy: {default: allow}\n"+
			"upstreams: [{name: demo, url: \"http://127.0.0.1:1/mcp\"}]\n"+
			"agent_tasks: {redis_url: \"redis://"+deadpeer.Silent(t)+"/0\"}\n"))
		if err != nil {
			t.Fatal(err)
		}
		cfg.DataDir = dir
		sctx, cancel := context.WithCancel(ctx)
		if signal {
			time.AfterFunc(300*time.Millisecond, cancel)
		}
		start := time.Now()
		err = serve(sctx, cfg, slog.New(slog.DiscardHandler), func(bound) { t.Error("serve started with its Redis not answering") })
		took := time.Since(start)
		cancel()
		// The Redis read deadline (2 s), then shutdown_timeout (1 s).
		if err == nil || took > 5*time.Second {
			t.Errorf("signal %v, events.db locked: serve returned %v after %s; want an error within 5s", signal, err, took.Round(time.Millisecond))
		}
		lock.ExecContext(ctx, "ROLLBACK")
		lock.Close()
		db.Close()
	}
}
