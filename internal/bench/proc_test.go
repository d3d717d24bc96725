package bench

import (
	"os"
	"runtime"
	"testing"
	"time"
)

func TestParseStatCPU(t *testing.T) {
	tests := []struct {
		name    string
		stat    string
		want    uint64
		wantErr bool
	}{
		{
			name: "plain",
			stat: "1234 (sluice) S 1 1234 1234 0 -1 4194560 500 0 0 0 250 31 0 0 20 0 5 0 100 1000000 2000 18446744073709551615\n",
			want: 281,
		},
		{
			name: "command name with spaces and parentheses",
			stat: "99 (a) b (c) R 1 99 99 0 -1 0 0 0 0 0 7 3 0 0 20 0 1 0 1 1 1\n",
			want: 10,
		},
		{name: "no command name", stat: "1 sluice S 1", wantErr: true},
		{name: "truncated", stat: "1 (sluice) S 1 1 1 0", wantErr: true},
		{name: "not a number", stat: "1 (x) S 1 1 1 0 -1 0 0 0 0 0 x 3 0\n", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseStatCPU([]byte(tt.stat))
			if (err != nil) != tt.wantErr {
				t.Fatalf("parseStatCPU: got error %v, want error %v", err, tt.wantErr)
			}
			if got != tt.want {
				t.Errorf("parseStatCPU = %d, want %d", got, tt.want)
			}
		})
	}
}

func TestParseStatusRSS(t *testing.T) {
	status := "Name:\tsluice\nVmPeak:\t  99999 kB\nVmRSS:\t   12345 kB\nThreads:\t5\n"
	got, err := parseStatusRSS([]byte(status))
	if err != nil {
		t.Fatal(err)
	}
	if want := int64(12345 * 1024); got != want {
		t.Errorf("parseStatusRSS = %d, want %d", got, want)
	}
	if _, err := parseStatusRSS([]byte("Name:\tkthreadd\nThreads:\t1\n")); err == nil {
		t.Error("parseStatusRSS without VmRSS: got no error, want one")
	}
}

// TestProcSelf reads this test process's own /proc entries: CPU time must
// grow while the test spins, and RSS must be plausible.
func TestProcSelf(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("/proc readers are Linux only")
	}
	pid := os.Getpid()
	before, err := CPUTime(pid)
	if err != nil {
		t.Fatal(err)
	}
	// Spin until the kernel has charged at least three ticks, or give up
	// after a generous wall-clock bound on a loaded machine.
	var after time.Duration
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); {
		spin()
		if after, err = CPUTime(pid); err != nil {
			t.Fatal(err)
		}
		if after-before >= 3*clockTick {
			break
		}
	}
	if after-before < 3*clockTick {
		t.Errorf("CPU time grew by %v while spinning, want at least %v", after-before, 3*clockTick)
	}

	rss, err := RSS(pid)
	if err != nil {
		t.Fatal(err)
	}
	if rss < 1<<20 || rss > 64<<30 {
		t.Errorf("RSS = %d bytes, want between 1 MiB and 64 GiB", rss)
	}
}

var sink uint64

func spin() {
	x := sink
	for i := range 5_000_000 {
		x = x*6364136223846793005 + uint64(i)
	}
	sink = x
}

func TestCPUTimeNoSuchProcess(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("/proc readers are Linux only")
	}
	// PID max on Linux is at most 2^22, so this one never exists.
	if _, err := CPUTime(1 << 23); err == nil {
		t.Error("CPUTime of a missing process: got no error, want one")
	}
}
