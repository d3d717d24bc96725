package main

import (
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// `sluice wrap --url` whose upstream never answers initialize: when the
// stdio client goes away (stdin closes), the wrap must end. The relay's
// client-to-upstream pump is now stuck in Write (notifications/initialized
// waits for the initialize answer, with the session's context, which
// nothing cancels), so it never reads stdin's EOF and the wrap, its
// goroutines and the hanging upstream request live forever. The same
// relay serves /ws and /sse clients of a gateway: each such connection
// leaks.
func TestWrapEndsWhenClientLeavesDuringUnansweredInitialize(t *testing.T) {
	release := make(chan struct{})
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		if strings.Contains(string(b), `"initialize"`) {
			select { // never answers initialize
			case <-release:
			case <-r.Context().Done():
			}
			return
		}
		w.WriteHeader(http.StatusAccepted)
	}))
	defer up.Close()
	defer close(release)
	dir := t.TempDir()
	cfg := filepath.Join(dir, "sluice.yaml")
	os.WriteFile(cfg, []byte("data_dir: "+dir+"\nclassifier: {provider: off}\n"), 0o600)
	stdin := strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}` + "\n" +
		`{"jsonrpc":"2.0","method":"notifications/initialized"}` + "\n") // then EOF: the client is gone
	done := make(chan error, 1)
	go func() {
		done <- wrapIO(t.Context(), []string{"--config", cfg, "--url", up.URL + "/mcp"}, stdin, io.Discard, nil)
	}()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("wrap still running 5s after its stdin closed: the relay waits for an initialize answer that never comes")
	}
}
