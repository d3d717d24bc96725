package audit

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/sluicehq/sluice/telemetry"
)

// crashEnv tells the test binary, re-executed by TestKill9, to be the
// child that appends until it is killed.
const crashEnv = "SLUICE_AUDIT_CRASH_DB"

// TestKill9 runs a child process that appends events with Sync from
// several goroutines and prints the index of each one Append acknowledged.
// The parent SIGKILLs it mid-stream, reopens the database and checks that
// every acknowledged event is there: the package's durability promise.
func TestKill9(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a child process")
	}
	path := filepath.Join(t.TempDir(), FileName)
	cmd := exec.Command(os.Args[0], "-test.run=^TestCrashChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), crashEnv+"="+path)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	const killAfter = 2000
	acked := map[string]bool{}
	killed := false
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		n, ok := strings.CutPrefix(sc.Text(), "ack ")
		if !ok {
			continue
		}
		acked[n] = true
		if len(acked) == killAfter && !killed {
			if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			killed = true
		}
		// Keep reading: lines written before the kill are acknowledged too.
	}
	err = cmd.Wait()
	if !killed {
		t.Fatalf("child exited after %d acknowledgements without being killed: %v", len(acked), err)
	}
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Fatalf("child ended with %v, want killed by SIGKILL", err)
	}

	st, err := Open(path, Options{})
	if err != nil {
		t.Fatalf("reopening after kill -9: %v", err)
	}
	defer st.Close()
	var check string
	if err := st.db.QueryRow("PRAGMA integrity_check").Scan(&check); err != nil || check != "ok" {
		t.Errorf("integrity_check after kill -9: got %q, %v; want ok", check, err)
	}
	got, err := st.Query(context.Background(), Filter{})
	if err != nil {
		t.Fatal(err)
	}
	stored := map[string]bool{}
	for _, e := range got {
		stored[e.TxnID] = true
	}
	missing := 0
	for n := range acked {
		if !stored[n] {
			missing++
			if missing <= 10 {
				t.Errorf("event %s was acknowledged but is not in the database", n)
			}
		}
	}
	if missing > 0 {
		t.Errorf("%d of %d acknowledged events are missing", missing, len(acked))
	}
	t.Logf("%d acknowledged, %d stored (unacknowledged ones may or may not be there)", len(acked), len(got))
}

// TestCrashChild is the child of TestKill9; run alone it does nothing.
func TestCrashChild(t *testing.T) {
	path := os.Getenv(crashEnv)
	if path == "" {
		t.Skip("the child process of TestKill9")
	}
	st, err := Open(path, Options{Sync: true})
	if err != nil {
		fmt.Fprintln(os.Stderr, "child:", err)
		os.Exit(3)
	}
	const workers, max = 8, 1_000_000 // max only bounds a child whose parent died
	var mu sync.Mutex                 // one line per write, whole
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := w; i < max; i += workers {
				n := strconv.Itoa(i)
				err := st.Append(context.Background(), telemetry.Event{
					Type: "sluice.test", TxnID: n, Attrs: map[string]any{"payload": strings.Repeat("x", 200)},
				})
				if err != nil {
					fmt.Fprintln(os.Stderr, "child:", err)
					os.Exit(3)
				}
				mu.Lock()
				fmt.Fprintf(os.Stdout, "ack %s\n", n)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	os.Exit(4) // never reached in the test: the parent kills first
}
