package classifier

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestInjectionDocs scans every Markdown file (200 bytes or more) under
// the directories in SLUICE_DOCS_DIRS (comma-separated: installed npm
// packages, the Go module cache…) as a tool result and fails if more than
// 1 % raise a finding: documentation is what a docs or repository tool
// returns, and none of it is an injection. It is skipped without the
// variable, since what is installed differs from machine to machine. At
// the time of writing, e2e/node_modules and the Go module cache here gave
// 10 findings in 1,668 files.
func TestInjectionDocs(t *testing.T) {
	dirs := os.Getenv("SLUICE_DOCS_DIRS")
	if dirs == "" {
		t.Skip("set SLUICE_DOCS_DIRS to directories of Markdown documentation")
	}
	var files []string
	for _, root := range strings.Split(dirs, ",") {
		_ = filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
			if err == nil && !d.IsDir() && strings.HasSuffix(strings.ToLower(d.Name()), ".md") {
				files = append(files, p)
			}
			return nil
		})
	}
	slices.Sort(files)
	n, alarms := 0, map[string]int{}
	for _, p := range files {
		b, err := os.ReadFile(p)
		if err != nil || len(b) < 200 {
			continue
		}
		n++
		if fs := DetectInjectionTextFrom(string(b), InResult); len(fs) > 0 {
			alarms[fs[0].Kind]++
			t.Logf("%s: %v", p, fs)
		}
	}
	total := 0
	for _, c := range alarms {
		total += c
	}
	summary := fmt.Sprintf("%d Markdown files, %d with a finding (%.2f %%): %v", n, total, 100*float64(total)/float64(max(n, 1)), alarms)
	t.Log(summary)
	if n == 0 {
		t.Fatal("no Markdown files under " + dirs)
	}
	if total*100 > n {
		t.Error(summary + ": more than 1 %")
	}
}
