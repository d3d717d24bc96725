package inventory

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// corpusFile is a tools/list result with where it came from and, for
// shadowing attacks, the tools of the other servers it aims at.
type corpusFile struct {
	Source  string         `json:"source"`
	Foreign []string       `json:"foreign"`
	Tools   jsontext.Value `json:"tools"`
}

type corpusScore struct{ tp, fp, tn, fn int }

func (s corpusScore) precision() float64 { return float64(s.tp) / float64(s.tp+s.fp) }
func (s corpusScore) recall() float64    { return float64(s.tp) / float64(s.tp+s.fn) }

func (s corpusScore) String() string {
	return fmt.Sprintf("%d poisoned, %d benign tools: TP %d FP %d TN %d FN %d, precision %.3f, recall %.3f",
		s.tp+s.fn, s.fp+s.tn, s.tp, s.fp, s.tn, s.fn, s.precision(), s.recall())
}

// scoreCorpus scans every tool under dir/{benign,poisoned} and counts the
// tools Suspicious calls poisoned.
func scoreCorpus(t *testing.T, dir string) corpusScore {
	t.Helper()
	var sc corpusScore
	for _, label := range []string{"benign", "poisoned"} {
		files, err := filepath.Glob(filepath.Join(dir, label, "*.json"))
		if err != nil || len(files) == 0 {
			t.Fatalf("no corpus files in %s/%s: %v", dir, label, err)
		}
		for _, path := range files {
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			var f corpusFile
			if err := json.Unmarshal(b, &f); err != nil {
				t.Fatalf("%s: %v", path, err)
			}
			page, err := ParsePage(jsontext.Value(`{"tools":` + string(f.Tools) + `}`))
			if err != nil {
				t.Fatalf("%s: %v", path, err)
			}
			for _, tool := range page.Tools {
				fs := Scan(tool, ScanOptions{ForeignTools: f.Foreign})
				got := Suspicious(fs)
				switch {
				case label == "poisoned" && got:
					sc.tp++
				case label == "poisoned":
					sc.fn++
					t.Logf("missed: %s %s", filepath.Base(path), tool.Name)
				case got:
					sc.fp++
					t.Logf("false positive: %s %s: %s", filepath.Base(path), tool.Name, describe(fs))
				default:
					sc.tn++
				}
				if testing.Verbose() && got {
					t.Logf("%s %s: %s", filepath.Base(path), tool.Name, describe(fs))
				}
			}
		}
	}
	return sc
}

func describe(fs []Finding) string {
	var parts []string
	for _, f := range fs {
		parts = append(parts, fmt.Sprintf("%s/%s@%s", f.Rule, f.Severity, f.Field))
	}
	return strings.Join(parts, " ")
}

// TestScanCorpus measures the poisoning scan on real tool lists. The
// tuning set is what the rules were written against; the held-out set was
// collected and frozen before it was first scanned, and is the honest
// estimate. See testdata/corpus/README.md.
func TestScanCorpus(t *testing.T) {
	for _, tt := range []struct {
		dir                     string
		minPrecision, minRecall float64
	}{
		{"testdata/corpus/tuning", 1, 1},
		// First run: precision 0.889 (context7's "request clarification
		// before proceeding" was a false positive), recall 1.
		{"testdata/corpus/heldout", 0.85, 0.85},
	} {
		t.Run(filepath.Base(tt.dir), func(t *testing.T) {
			sc := scoreCorpus(t, tt.dir)
			t.Log(sc)
			if sc.precision() < tt.minPrecision || sc.recall() < tt.minRecall {
				t.Errorf("precision %.3f, recall %.3f; want at least %.3f and %.3f", sc.precision(), sc.recall(), tt.minPrecision, tt.minRecall)
			}
		})
	}
}
