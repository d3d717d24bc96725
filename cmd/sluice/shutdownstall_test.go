package main

import (
	"context"
	"database/sql"
	"path/filepath"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/sluicehq/sluice/audit"
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
