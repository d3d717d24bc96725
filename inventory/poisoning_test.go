package inventory

import (
	"cmp"
	"fmt"
	"hash/fnv"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// maxFalseAlarmRate is the share of the real corpus's legitimate tools that
// Scan may call suspicious (issue 11).
const maxFalseAlarmRate = 0.02

// heldOutMinCatchRate is the floor for the held-out published examples:
// 10 of 12 at the first run on them (testdata/poisoning/SOURCES.md).
const heldOutMinCatchRate = 10.0 / 12

// realTool is one legitimate tool of the real-world corpus.
type realTool struct {
	server string
	// heldOut is true for servers in folds 3–4 of the corpus (see
	// classifier/testdata/corpus/README.md): their false alarms were not
	// read while the rules were tuned.
	heldOut bool
	tool    Tool
}

// corpusServersDir is where the real-world corpus's recorded servers are.
// SLUICE_CORPUS_SERVERS points the test at another copy (a corpus being
// collected elsewhere).
func corpusServersDir() string {
	if d := os.Getenv("SLUICE_CORPUS_SERVERS"); d != "" {
		return d
	}
	return filepath.Join("..", "classifier", "testdata", "corpus", "servers")
}

// heldOutServer says whether a corpus server is in the held-out folds:
// fnv32a(id) % 5 is 3 or 4.
func heldOutServer(id string) bool {
	h := fnv.New32a()
	h.Write([]byte(id))
	return h.Sum32()%5 >= 3
}

// loadRealTools reads every recorded tool of the corpus servers and the
// tools of classifier/testdata/tools.json. A tools.json entry with the same
// name and description as a recorded tool is the same tool and is counted
// once.
func loadRealTools(t *testing.T) []realTool {
	t.Helper()
	var out []realTool
	seen := map[string]bool{}
	files, err := filepath.Glob(filepath.Join(corpusServersDir(), "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range files {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		var f struct {
			Spec struct {
				ID string `json:"id"`
			} `json:"spec"`
			Recorded struct {
				Tools jsontext.Value `json:"tools"`
			} `json:"recorded"`
		}
		if err := json.Unmarshal(b, &f); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if len(f.Recorded.Tools) == 0 {
			continue // not recorded yet
		}
		id := cmp.Or(f.Spec.ID, strings.TrimSuffix(filepath.Base(path), ".json"))
		page, err := ParsePage(jsontext.Value(`{"tools":` + string(f.Recorded.Tools) + `}`))
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		for _, tool := range page.Tools {
			seen[tool.Name+"\x00"+tool.Description] = true
			out = append(out, realTool{server: id, heldOut: heldOutServer(id), tool: tool})
		}
	}
	b, err := os.ReadFile(filepath.Join("..", "classifier", "testdata", "tools.json"))
	if err != nil {
		t.Fatal(err)
	}
	var tj struct {
		Tools []struct {
			Server      string         `json:"server"`
			Name        string         `json:"name"`
			Title       string         `json:"title"`
			Description string         `json:"description"`
			InputSchema jsontext.Value `json:"inputSchema"`
			Annotations jsontext.Value `json:"annotations"`
		} `json:"tools"`
	}
	if err := json.Unmarshal(b, &tj); err != nil {
		t.Fatalf("tools.json: %v", err)
	}
	for _, r := range tj.Tools {
		k := r.Name + "\x00" + r.Description
		if seen[k] {
			continue
		}
		seen[k] = true
		tool := Tool{Name: r.Name, Title: r.Title, Description: r.Description, InputSchema: r.InputSchema, Annotations: r.Annotations}
		if err := tool.seal(); err != nil {
			t.Fatalf("tools.json %s/%s: %v", r.Server, r.Name, err)
		}
		out = append(out, realTool{server: "tools.json:" + r.Server, tool: tool})
	}
	return out
}

// TestPoisoningFalseAlarms scans every legitimate tool of the real-world
// corpus (classifier/testdata/corpus/servers and classifier/testdata/
// tools.json), prints which rules fire on which tools, and fails when more
// than 2 % of the tools are called suspicious: a finding of medium severity
// or above, what Inventory.RiskFactors and policy see. Rates are given for the
// tuning split (folds 0–2 and tools.json) and the held-out folds 3–4.
func TestPoisoningFalseAlarms(t *testing.T) {
	tools := loadRealTools(t)
	if len(tools) < 300 {
		t.Fatalf("%d real tools loaded from %s and tools.json; want the corpus (at least 300)", len(tools), corpusServersDir())
	}
	type ruleStat struct {
		rule     string
		severity Severity
		tools    []string
	}
	stats := map[string]*ruleStat{}
	var flagged, heldOut, heldOutFlagged int
	servers := map[string]bool{}
	flaggedServers := map[string]bool{}
	for _, rt := range tools {
		fs := Scan(rt.tool, ScanOptions{})
		servers[rt.server] = true
		if rt.heldOut {
			heldOut++
		}
		sus := Suspicious(fs)
		if sus {
			flagged++
			flaggedServers[rt.server] = true
			if rt.heldOut {
				heldOutFlagged++
			}
		}
		byRule := map[string]bool{}
		for _, f := range fs {
			if byRule[f.Rule+f.Severity.String()] {
				continue
			}
			byRule[f.Rule+f.Severity.String()] = true
			k := f.Rule + "/" + f.Severity.String()
			st := stats[k]
			if st == nil {
				st = &ruleStat{rule: f.Rule, severity: f.Severity}
				stats[k] = st
			}
			st.tools = append(st.tools, rt.server+"/"+rt.tool.Name)
			if f.Severity >= SeverityMedium {
				t.Logf("flagged %s/%s: %s %s at %s: %q", rt.server, rt.tool.Name, f.Rule, f.Severity, f.Field, f.Excerpt)
			}
		}
	}
	var table []*ruleStat
	for _, st := range stats {
		table = append(table, st)
	}
	slices.SortFunc(table, func(a, b *ruleStat) int {
		return cmp.Or(cmp.Compare(b.severity, a.severity), cmp.Compare(len(b.tools), len(a.tools)), strings.Compare(a.rule, b.rule))
	})
	var sb strings.Builder
	fmt.Fprintf(&sb, "%-24s %-7s %5s  %s\n", "rule", "sev", "tools", "examples")
	for _, st := range table {
		ex := st.tools[:min(4, len(st.tools))]
		more := ""
		if len(st.tools) > len(ex) {
			more = fmt.Sprintf(", … %d more", len(st.tools)-len(ex))
		}
		fmt.Fprintf(&sb, "%-24s %-7s %5d  %s%s\n", st.rule, st.severity, len(st.tools), strings.Join(ex, ", "), more)
	}
	rate := float64(flagged) / float64(len(tools))
	tuning := len(tools) - heldOut
	fmt.Fprintf(&sb, "suspicious: %d of %d tools (%.2f %%) on %d of %d servers; tuning split %d of %d (%.2f %%), held-out folds %d of %d (%.2f %%)",
		flagged, len(tools), 100*rate, len(flaggedServers), len(servers),
		flagged-heldOutFlagged, tuning, 100*float64(flagged-heldOutFlagged)/float64(max(1, tuning)),
		heldOutFlagged, heldOut, 100*float64(heldOutFlagged)/float64(max(1, heldOut)))
	t.Log("poisoning scan on legitimate tools\n" + sb.String())
	if rate > maxFalseAlarmRate {
		t.Errorf("%d of %d legitimate tools (%.2f %%) called suspicious; want at most %.0f %%", flagged, len(tools), 100*rate, 100*maxFalseAlarmRate)
	}
}

// poisonedFile is one published tool-poisoning example under
// testdata/poisoning: the tools as the attacking server lists them, where
// they came from, which of them carry no attack, and for shadowing the
// tools of the other server the attack aims at.
type poisonedFile struct {
	Source    string         `json:"source"`
	Technique string         `json:"technique"`
	Foreign   []string       `json:"foreign"`
	Benign    []string       `json:"benign"`
	Tools     jsontext.Value `json:"tools"`
}

// catchScore counts, over a set of published examples, the poisoned tools
// Scan calls suspicious and the benign tools beside them it calls so too.
type catchScore struct {
	caught, poisoned, benignFlagged, benign int
	missed                                  []string
}

func (c catchScore) rate() float64 { return float64(c.caught) / float64(max(1, c.poisoned)) }

// scoreExamples scans every tool of the example files in dirs.
func scoreExamples(t *testing.T, sb *strings.Builder, dirs ...string) catchScore {
	t.Helper()
	var sc catchScore
	seenBenign := map[string]bool{}
	for _, dir := range dirs {
		files, err := filepath.Glob(filepath.Join(dir, "*.json"))
		if err != nil || len(files) == 0 {
			t.Fatalf("no example files in %s: %v", dir, err)
		}
		for _, path := range files {
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			var f poisonedFile
			if err := json.Unmarshal(b, &f); err != nil {
				t.Fatalf("%s: %v", path, err)
			}
			page, err := ParsePage(jsontext.Value(`{"tools":` + string(f.Tools) + `}`))
			if err != nil {
				t.Fatalf("%s: %v", path, err)
			}
			// testdata/corpus/*/poisoned files hold only poisoned tools.
			allPoisoned := filepath.Base(dir) == "poisoned"
			var caught, poisoned, flagged, benign int
			for _, tool := range page.Tools {
				fs := Scan(tool, ScanOptions{ForeignTools: f.Foreign})
				sus := Suspicious(fs)
				if !allPoisoned && slices.Contains(f.Benign, tool.Name) {
					if seenBenign[tool.Hash] {
						continue
					}
					seenBenign[tool.Hash] = true
					benign++
					if sus {
						flagged++
						t.Logf("benign tool flagged: %s %s: %s", filepath.Base(path), tool.Name, describe(fs))
					}
					continue
				}
				poisoned++
				if sus {
					caught++
				} else {
					sc.missed = append(sc.missed, filepath.Base(path)+" "+tool.Name)
				}
			}
			fmt.Fprintf(sb, "%-64s %2d/%-2d poisoned caught, %d/%d benign flagged\n",
				strings.TrimPrefix(filepath.ToSlash(path), "testdata/"), caught, poisoned, flagged, benign)
			sc.caught += caught
			sc.poisoned += poisoned
			sc.benignFlagged += flagged
			sc.benign += benign
		}
	}
	return sc
}

// TestPoisoningCatchRate measures Scan on published tool-poisoning
// examples (testdata/poisoning/SOURCES.md), split by source: the tuning
// sources were read while the rules were written, the held-out sources
// were collected and frozen first and are the honest estimate.
func TestPoisoningCatchRate(t *testing.T) {
	for _, tt := range []struct {
		name    string
		dirs    []string
		minRate float64
	}{
		{"tuning", []string{"testdata/poisoning/tuning", "testdata/corpus/tuning/poisoned", "testdata/corpus/heldout/poisoned"}, 1},
		{"heldout", []string{"testdata/poisoning/heldout"}, heldOutMinCatchRate},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var sb strings.Builder
			sc := scoreExamples(t, &sb, tt.dirs...)
			fmt.Fprintf(&sb, "caught %d of %d poisoned tools (%.1f %%); %d of %d benign tools beside them flagged",
				sc.caught, sc.poisoned, 100*sc.rate(), sc.benignFlagged, sc.benign)
			if len(sc.missed) > 0 {
				fmt.Fprintf(&sb, "\nmissed: %s", strings.Join(sc.missed, "; "))
			}
			t.Log(tt.name + " published examples\n" + sb.String())
			if sc.rate() < tt.minRate {
				t.Errorf("caught %d of %d poisoned tools (%.3f); want at least %.3f", sc.caught, sc.poisoned, sc.rate(), tt.minRate)
			}
		})
	}
}
