package inventory

import (
	"os"
	"strings"
	"testing"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

func githubList(b *testing.B) jsontext.Value {
	raw, err := os.ReadFile("testdata/corpus/tuning/benign/server-github.json")
	if err != nil {
		b.Fatal(err)
	}
	var f corpusFile
	if err := json.Unmarshal(raw, &f); err != nil {
		b.Fatal(err)
	}
	return jsontext.Value(`{"tools":` + string(f.Tools) + `}`)
}

// The common case: an upstream lists the tools it listed before.
func BenchmarkObserveToolsUnchanged(b *testing.B) {
	list := githubList(b)
	inv, err := New(Options{Dir: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	inv.ObserveTools("github", list)
	b.SetBytes(int64(len(list)))
	for b.Loop() {
		inv.ObserveTools("github", list)
	}
}

func BenchmarkBlocked(b *testing.B) {
	inv, err := New(Options{Dir: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	inv.ObserveTools("github", githubList(b))
	for b.Loop() {
		inv.Blocked("github", "create_issue")
	}
}

// Scanning all 26 tools of server-github, as on its first list.
func BenchmarkScanTool(b *testing.B) {
	p, err := ParsePage(githubList(b))
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		for _, t := range p.Tools {
			Scan(t, ScanOptions{})
		}
	}
}

// An upstream that flips between two versions of one description: each
// list is parsed, hashed, diffed, signed and written (scans are cached by
// tool hash).
func BenchmarkObserveToolsChanged(b *testing.B) {
	a := githubList(b)
	c := jsontext.Value(strings.Replace(string(a), "Search for GitHub repositories", "Search for GitHub repositories!", 1))
	inv, err := New(Options{Dir: b.TempDir(), OnDrift: DriftWarn})
	if err != nil {
		b.Fatal(err)
	}
	inv.ObserveTools("github", a)
	i := 0
	for b.Loop() {
		if i++; i%2 == 0 {
			inv.ObserveTools("github", a)
		} else {
			inv.ObserveTools("github", c)
		}
	}
}
