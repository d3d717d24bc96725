package bench

import (
	"fmt"
	"io"
	"slices"
	"text/tabwriter"
	"time"
)

// Row is one measured phase: one target at one concurrency.
type Row struct {
	// Target names what the calls went to: "direct", "bare", "sluice", ...
	Target      string `json:"target"`
	Concurrency int    `json:"concurrency"`
	Calls       int    `json:"calls"`
	Errors      int    `json:"errors"`
	// FirstError is one of the errors, if there were any.
	FirstError  string  `json:"first_error,omitempty"`
	Seconds     float64 `json:"seconds"`
	CallsPerSec float64 `json:"calls_per_sec"`
	P50Ms       float64 `json:"p50_ms"`
	P99Ms       float64 `json:"p99_ms"`
	// CPUOf says whose CPU CPUPerCallUs and RSSMiB are: "proxy", or
	// "upstream" when there is no proxy.
	CPUOf        string  `json:"cpu_of"`
	CPUPerCallUs float64 `json:"cpu_us_per_call"`
	// UpstreamCPUPerCallUs is the upstream's CPU per call in every row, to
	// show that the proxies leave the upstream's work alone.
	UpstreamCPUPerCallUs float64 `json:"upstream_cpu_us_per_call"`
	// RSSMiB is the resident memory at the end of the phase.
	RSSMiB float64 `json:"rss_mib"`
}

// Sample is the CPU time and RSS of one process across a measured phase.
type Sample struct {
	// CPU is the CPU time used during the phase.
	CPU time.Duration
	// RSS is the resident set size in bytes at the end.
	RSS int64
}

// NewRow summarizes a phase. measured is the process the row is about (the
// proxy, or the upstream when cpuOf is "upstream"); upstream is the
// upstream in every case.
func NewRow(target string, concurrency int, res *Result, cpuOf string, measured, upstream Sample) Row {
	row := Row{
		Target:      target,
		Concurrency: concurrency,
		Calls:       res.Calls,
		Errors:      res.Errors,
		Seconds:     res.Elapsed.Seconds(),
		CallsPerSec: res.Rate(),
		P50Ms:       ms(Percentile(res.Latencies, 50)),
		P99Ms:       ms(Percentile(res.Latencies, 99)),
		CPUOf:       cpuOf,
		RSSMiB:      float64(measured.RSS) / (1 << 20),
	}
	if res.FirstErr != nil {
		row.FirstError = res.FirstErr.Error()
	}
	if n := res.Calls + res.Errors; n > 0 {
		row.CPUPerCallUs = us(measured.CPU) / float64(n)
		row.UpstreamCPUPerCallUs = us(upstream.CPU) / float64(n)
	}
	return row
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
func us(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }

// Ratio compares a target with a baseline at one concurrency.
type Ratio struct {
	Target      string `json:"target"`
	Baseline    string `json:"baseline"`
	Concurrency int    `json:"concurrency"`
	// Throughput is target calls/s over baseline calls/s: above 1 is faster.
	Throughput float64 `json:"throughput"`
	// CPU is target CPU per call over baseline CPU per call: below 1 is
	// cheaper.
	CPU float64 `json:"cpu"`
	// CPURounds is CPU in each round (Report.Rounds), when there were
	// several: how far one round's ratio is from another's says how much
	// of a difference is the machine's noise.
	CPURounds []float64 `json:"cpu_rounds,omitempty"`
}

// Report is the outcome of a benchmark run.
type Report struct {
	Rows   []Row   `json:"rows"`
	Ratios []Ratio `json:"ratios"`
	// Rounds are the rows of each round, when there were several (Rows
	// are their totals).
	Rounds [][]Row `json:"rounds,omitempty"`
}

// AddRatios appends the ratios of target to baseline at every concurrency
// where both have a row.
func (r *Report) AddRatios(target, baseline string) {
	for _, t := range r.Rows {
		if t.Target != target {
			continue
		}
		for _, b := range r.Rows {
			if b.Target != baseline || b.Concurrency != t.Concurrency {
				continue
			}
			q := Ratio{
				Target:      target,
				Baseline:    baseline,
				Concurrency: t.Concurrency,
				Throughput:  div(t.CallsPerSec, b.CallsPerSec),
				CPU:         div(t.CPUPerCallUs, b.CPUPerCallUs),
			}
			if len(r.Rounds) > 1 {
				for _, rows := range r.Rounds {
					rt, okt := findRow(rows, target, t.Concurrency)
					rb, okb := findRow(rows, baseline, t.Concurrency)
					if okt && okb {
						q.CPURounds = append(q.CPURounds, div(rt.CPUPerCallUs, rb.CPUPerCallUs))
					}
				}
			}
			r.Ratios = append(r.Ratios, q)
		}
	}
}

// findRow returns the row of target at concurrency c in rows.
func findRow(rows []Row, target string, c int) (Row, bool) {
	for _, row := range rows {
		if row.Target == target && row.Concurrency == c {
			return row, true
		}
	}
	return Row{}, false
}

func div(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a / b
}

// Errors returns the number of failed calls over all rows.
func (r *Report) Errors() int {
	n := 0
	for _, row := range r.Rows {
		n += row.Errors
	}
	return n
}

// WriteTable writes the rows as an aligned table, then the ratios and the
// first error of every row that had errors.
func (r *Report) WriteTable(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "target\tc\tcalls/s\tp50 ms\tp99 ms\tCPU µs/call\tRSS MiB\tupstream µs/call\terrors\t")
	marked := false
	for _, row := range r.Rows {
		mark := ""
		if row.CPUOf != "proxy" {
			mark, marked = " *", true
		}
		fmt.Fprintf(tw, "%s\t%d\t%.0f\t%.3f\t%.3f\t%.1f%s\t%.1f%s\t%.1f\t%d\t\n",
			row.Target, row.Concurrency, row.CallsPerSec, row.P50Ms, row.P99Ms,
			row.CPUPerCallUs, mark, row.RSSMiB, mark, row.UpstreamCPUPerCallUs, row.Errors)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if marked {
		fmt.Fprintln(w, "* no proxy: CPU and RSS of the upstream")
	}
	if len(r.Ratios) > 0 {
		fmt.Fprintln(w)
	}
	for _, q := range r.Ratios {
		fmt.Fprintf(w, "%s/%s c=%d: throughput %.2f×, CPU per call %.2f×",
			q.Target, q.Baseline, q.Concurrency, q.Throughput, q.CPU)
		if n := len(q.CPURounds); n > 1 {
			rs := slices.Sorted(slices.Values(q.CPURounds))
			median := rs[n/2]
			if n%2 == 0 {
				median = (rs[n/2-1] + rs[n/2]) / 2
			}
			fmt.Fprintf(w, " (%d rounds: %.2f× to %.2f×, median %.2f×)", n, rs[0], rs[n-1], median)
		}
		fmt.Fprintln(w)
	}
	for _, row := range r.Rows {
		if row.Errors > 0 {
			fmt.Fprintf(w, "%s c=%d: %d of %d calls failed, e.g. %s\n",
				row.Target, row.Concurrency, row.Errors, row.Errors+row.Calls, row.FirstError)
		}
	}
	return nil
}
