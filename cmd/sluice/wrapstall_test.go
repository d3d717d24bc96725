package main

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"
)

// stuckWriter takes its first write and blocks every later one until
// released, as a pipe its reader no longer reads does once full. Like
// os.Stdout on a pipe (blocking, not in the runtime's poller), it takes
// no write deadline.
type stuckWriter struct {
	mu      sync.Mutex
	writes  int
	stuck   chan struct{} // closed when a write blocks
	release chan struct{}
}

func (w *stuckWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	w.writes++
	n := w.writes
	w.mu.Unlock()
	if n == 1 {
		return len(p), nil
	}
	if n == 2 {
		close(w.stuck)
	}
	<-w.release
	return 0, io.ErrClosedPipe
}

// TestWrapEndsOnSignalWhileClientDoesNotRead: a desktop client that
// stops reading wrap's stdout (hung, or done with the server but still
// alive) and then asks wrap to stop (SIGTERM, here the cancelled
// context) gets wrap gone within the shutdown bounds, the wrapped server
// stopped with it. Before, the write stuck on the full pipe held the
// relay for ever: os.Stdout on a pipe takes no write deadline, so the
// cancelled context could not end the write, and wrap ignored SIGTERM
// with its server still running.
func TestWrapEndsOnSignalWhileClientDoesNotRead(t *testing.T) {
	// os.Stdout is a blocking pipe like this one's write end: no deadline.
	var fds [2]int
	if err := syscall.Pipe(fds[:]); err != nil {
		t.Fatal(err)
	}
	pr, pw := os.NewFile(uintptr(fds[0]), "r"), os.NewFile(uintptr(fds[1]), "stdout")
	defer pr.Close()
	defer pw.Close()
	if err := pw.SetWriteDeadline(time.Time{}); err == nil {
		t.Fatal("a blocking pipe took a write deadline; this test models one that does not")
	}

	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	cfg := filepath.Join(dir, "sluice.yaml")
	if err := os.WriteFile(cfg, []byte("data_dir: "+filepath.Join(dir, "data")+"\nclassifier: {provider: off}\nshutdown_timeout: 2s\npolicy: {default: deny}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	out := &stuckWriter{stuck: make(chan struct{}), release: make(chan struct{})}
	defer close(out.release)
	inR, inW := io.Pipe()
	defer inW.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		done <- wrapIO(ctx, []string{"--config", cfg, "--name", "scripted", "--admin-listen", "off", "--log-level", "error", "--", exe, scriptedServerArg, filepath.Join(dir, "server.log")},
			inR, out, nil)
	}()
	io.WriteString(inW, `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"desktop","version":"1"}}}`+"\n")
	io.WriteString(inW, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{}}}`+"\n")
	select {
	case <-out.stuck:
	case err := <-done:
		t.Fatalf("wrap ended before writing the denial: %v", err)
	case <-time.After(20 * time.Second):
		t.Fatal("wrap wrote no second line")
	}
	cancel() // SIGTERM
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("wrap: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("wrap did not end 30s after SIGTERM while a write to its client was stuck")
	}
}
