package bench

import (
	"context"
	"fmt"
	"slices"
	"time"
)

// Phase is one target at one concurrency: a warm-up, then a measured run
// during which the CPU time of the processes involved is taken.
type Phase struct {
	// Target names the row.
	Target      string
	Concurrency int
	// Warmup runs calls that are not counted, to open connections and
	// grow pools and heaps first. Zero means none.
	Warmup time.Duration
	// Duration is the length of the measured run.
	Duration time.Duration
	// Call makes one call to the target.
	Call Call
	// ProxyPID is the process between the load generator and the upstream,
	// or 0 when calls go straight to the upstream.
	ProxyPID int
	// UpstreamPID is the upstream's process.
	UpstreamPID int
	// ReplicaPIDs are more proxy processes serving the same calls (a
	// target of several replicas): their CPU and RSS add to ProxyPID's.
	ReplicaPIDs []int
}

// Measurement is what one or more runs of a phase measured.
type Measurement struct {
	Target      string
	Concurrency int
	Result      *Result
	// CPUOf says whose CPU Measured is: "proxy", or "upstream" when there
	// is no proxy.
	CPUOf    string
	Measured Sample
	Upstream Sample
}

// Measure runs p. It fails only when a process cannot be read or ctx ends;
// failed calls are counted in the result.
func Measure(ctx context.Context, p Phase) (*Measurement, error) {
	if p.Warmup > 0 {
		Run(ctx, Options{Concurrency: p.Concurrency, Duration: p.Warmup}, p.Call)
	}
	measured, cpuOf := p.ProxyPID, "proxy"
	if measured == 0 {
		measured, cpuOf = p.UpstreamPID, "upstream"
	}
	pids := append([]int{measured}, p.ReplicaPIDs...)
	cpuOfAll := func() (time.Duration, error) {
		var sum time.Duration
		for _, pid := range pids {
			c, err := CPUTime(pid)
			if err != nil {
				return 0, err
			}
			sum += c
		}
		return sum, nil
	}
	m0, err := cpuOfAll()
	if err != nil {
		return nil, err
	}
	u0, err := CPUTime(p.UpstreamPID)
	if err != nil {
		return nil, err
	}
	res := Run(ctx, Options{Concurrency: p.Concurrency, Duration: p.Duration}, p.Call)
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	m1, err := cpuOfAll()
	if err != nil {
		return nil, fmt.Errorf("%s after the run: %w", p.Target, err)
	}
	u1, err := CPUTime(p.UpstreamPID)
	if err != nil {
		return nil, fmt.Errorf("upstream after the run: %w", err)
	}
	var rss int64
	for _, pid := range pids {
		r, err := RSS(pid)
		if err != nil {
			return nil, err
		}
		rss += r
	}
	return &Measurement{
		Target:      p.Target,
		Concurrency: p.Concurrency,
		Result:      res,
		CPUOf:       cpuOf,
		Measured:    Sample{CPU: m1 - m0, RSS: rss},
		Upstream:    Sample{CPU: u1 - u0},
	}, nil
}

// Add folds a later run of the same phase into m: calls, errors, time and
// CPU add up, latencies are pooled, and RSS is the later one.
func (m *Measurement) Add(o *Measurement) {
	r, s := m.Result, o.Result
	r.Calls += s.Calls
	r.Errors += s.Errors
	if r.FirstErr == nil {
		r.FirstErr = s.FirstErr
	}
	r.Elapsed += s.Elapsed
	r.Latencies = append(r.Latencies, s.Latencies...)
	slices.Sort(r.Latencies)
	m.Measured.CPU += o.Measured.CPU
	m.Measured.RSS = o.Measured.RSS
	m.Upstream.CPU += o.Upstream.CPU
}

// Row summarizes m.
func (m *Measurement) Row() Row {
	return NewRow(m.Target, m.Concurrency, m.Result, m.CPUOf, m.Measured, m.Upstream)
}
