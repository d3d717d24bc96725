package classifier

import (
	"fmt"
	"maps"
	"math"
	"os"
	"slices"
	"strings"
	"testing"
)

// TestFittedConfidence fits the confidence of every rule path claiming
// the high band on the corpus's dev split, as fittedConfidence says, and
// fails when the table differs from the fit or when the table changes a
// verdict. The held-out split is not read.
func TestFittedConfidence(t *testing.T) {
	if os.Getenv("SLUICE_CORPUS_KB") == "strict" {
		t.Skip("fitted on the shipped knowledge base, not the strict one")
	}
	calls := loadCorpus(t)
	raw := classifyCorpusFitted(t, calls, nil)
	type stats struct {
		n, ok   int
		servers map[string]bool
	}
	paths := map[rulePath]*stats{}
	for _, r := range raw {
		if r.heldOut {
			continue
		}
		for ax, axis := range []string{AxisActionType, AxisBoundary} {
			p := pathOf(axis, AxisVerdict{Classified: r.got[ax], Confidence: r.conf[ax], Source: r.src[ax]})
			s := paths[p]
			if s == nil {
				s = &stats{servers: map[string]bool{}}
				paths[p] = s
			}
			s.n++
			s.servers[r.server] = true
			if r.got[ax] == r.want[ax] {
				s.ok++
			}
		}
	}
	want := map[rulePath]float64{}
	var rows []string
	for _, p := range slices.SortedFunc(maps.Keys(paths), func(a, b rulePath) int {
		return strings.Compare(fmt.Sprintf("%s %s %s %.2f", a.axis, a.source, a.value, a.claim), fmt.Sprintf("%s %s %s %.2f", b.axis, b.source, b.value, b.claim))
	}) {
		s := paths[p]
		acc := float64(s.ok) / float64(s.n)
		fit := fittedFor(acc, len(s.servers))
		mark := ""
		if p.claim >= 0.9 && !(p.source == SourceConfig && p.claim == 1) && fit < p.claim {
			want[p] = fit
			mark = fmt.Sprintf(" -> %.2f", fit)
		}
		rows = append(rows, fmt.Sprintf("%-12s %-20s %-11s %.2f %5d calls %3d servers right %.3f fit %.2f%s", p.axis, p.source, p.value, p.claim, s.n, len(s.servers), acc, fit, mark))
	}
	t.Log("dev split by rule path (claim, calls, servers, accuracy, fit):\n" + strings.Join(rows, "\n"))
	if !maps.Equal(want, fittedConfidence) {
		var lines []string
		for p, c := range want {
			lines = append(lines, fmt.Sprintf("\t{%q, %q, %q, %v}: %.2f,", p.axis, p.source, p.value, p.claim, c))
		}
		slices.Sort(lines)
		t.Errorf("fittedConfidence is not the dev split's fit; want\n%s", strings.Join(lines, "\n"))
	}

	fitted := classifyCorpusFitted(t, calls, fittedConfidence)
	for i := range raw {
		if raw[i].got != fitted[i].got {
			t.Errorf("%s/%s: got %v with fitted confidences, %v without; want no verdict changed", raw[i].server, raw[i].d.ToolName, fitted[i].got, raw[i].got)
		}
	}
	// Calls scored in the high band, before and after, on both splits:
	// what the table costs in coverage.
	for ax, axis := range []string{AxisActionType, AxisBoundary} {
		var before, after [2]int
		for i := range raw {
			h := 0
			if raw[i].heldOut {
				h = 1
			}
			if raw[i].conf[ax] >= 0.9 {
				before[h]++
			}
			if fitted[i].conf[ax] >= 0.9 {
				after[h]++
			}
		}
		t.Logf("%s: calls scored >= 0.9, dev %d -> %d, held-out %d -> %d", axis, before[0], after[0], before[1], after[1])
	}
	// Where the composite routes the corpus's calls under the default
	// thresholds, before and after: lower confidences escalate more.
	route := func(r scored) Disposition {
		var v Verdict
		v.Axes.Set(AxisActionType, AxisVerdict{Classified: r.got[0], Confidence: r.conf[0]})
		v.Axes.Set(AxisBoundary, AxisVerdict{Classified: r.got[1], Confidence: r.conf[1]})
		return Thresholds{}.Route(Composite(v, Options{}))
	}
	moved := map[[2]Disposition]int{}
	for i := range raw {
		if a, b := route(raw[i]), route(fitted[i]); a != b {
			moved[[2]Disposition{a, b}]++
		}
	}
	t.Logf("default routing, calls that move (all %d calls): %v", len(raw), moved)
}

// fittedFor is the rule of succession over servers: (p·S + 1) / (S + 2),
// rounded down to 0.01 (fittedConfidence).
func fittedFor(p float64, servers int) float64 {
	s := float64(servers)
	return math.Floor((p*s+1)/(s+2)*100+1e-9) / 100
}
