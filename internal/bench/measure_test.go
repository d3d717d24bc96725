package bench

import (
	"errors"
	"slices"
	"testing"
	"time"
)

func TestMeasurementAdd(t *testing.T) {
	ms := time.Millisecond
	m := &Measurement{
		Target: "sluice", Concurrency: 1, CPUOf: "proxy",
		Result:   &Result{Calls: 2, Elapsed: time.Second, Latencies: []time.Duration{1 * ms, 3 * ms}},
		Measured: Sample{CPU: 10 * ms, RSS: 100},
		Upstream: Sample{CPU: 20 * ms},
	}
	errDown := errors.New("down")
	m.Add(&Measurement{
		Result:   &Result{Calls: 2, Errors: 1, FirstErr: errDown, Elapsed: time.Second, Latencies: []time.Duration{2 * ms, 4 * ms}},
		Measured: Sample{CPU: 20 * ms, RSS: 200},
		Upstream: Sample{CPU: 40 * ms},
	})
	row := m.Row()
	if row.Calls != 4 || row.Errors != 1 || row.FirstError != "down" {
		t.Errorf("calls, errors, first error = %d, %d, %q; want 4, 1, %q", row.Calls, row.Errors, row.FirstError, "down")
	}
	if want := []time.Duration{1 * ms, 2 * ms, 3 * ms, 4 * ms}; !slices.Equal(m.Result.Latencies, want) {
		t.Errorf("latencies = %v, want %v", m.Result.Latencies, want)
	}
	if row.CallsPerSec != 2 {
		t.Errorf("calls/s = %v, want 2", row.CallsPerSec)
	}
	// 30ms of proxy CPU over 5 calls, failed ones included.
	if row.CPUPerCallUs != 6000 || row.UpstreamCPUPerCallUs != 12000 {
		t.Errorf("CPU per call = %v µs, upstream %v µs; want 6000 and 12000", row.CPUPerCallUs, row.UpstreamCPUPerCallUs)
	}
	if m.Measured.RSS != 200 {
		t.Errorf("RSS = %d, want the later run's 200", m.Measured.RSS)
	}
}
