package classifier

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
)

// The corpus's files as the labelling guide (testdata/corpus/README.md)
// defines them. Only what the completeness check reads is decoded.
type corpusServerFile struct {
	Spec struct {
		ID      string   `json:"id"`
		Source  string   `json:"source"`
		Command []string `json:"command"`
		Kind    string   `json:"kind"`
	} `json:"spec"`
	Recorded *struct {
		Tools []struct {
			Name        string `json:"name"`
			InputSchema struct {
				Required []string `json:"required"`
			} `json:"inputSchema"`
		} `json:"tools"`
	} `json:"recorded"`
}

type corpusLabelsFile struct {
	Server       string `json:"server"`
	Labeller     string `json:"labeller"`
	UpstreamZone string `json:"upstream_zone"`
	Tools        []struct {
		Name       string          `json:"name"`
		Args       json.RawMessage `json:"args"`
		ActionType string          `json:"action_type"`
		Boundary   string          `json:"boundary"`
		Comment    string          `json:"comment"`
	} `json:"tools"`
}

var (
	corpusActionTypes = map[string]bool{"Read": true, "Write": true, "Execute": true, "Provision": true, "Orchestrate": true}
	corpusBoundaries  = map[string]bool{"Local": true, "Intra-org": true, "External": true}
	corpusKinds       = map[string]bool{"official": true, "vendor": true, "community": true}
	corpusID          = regexp.MustCompile(`^[a-z0-9-]+$`)
	corpusSource      = regexp.MustCompile(`^(npm|go):.+@[^@]+$`)
)

// TestCorpusLabelsComplete checks the corpus is whole before anything is
// measured on it: every server has a recording and a labels file (and every
// labels file a server), every recorded tool exactly one label, the labels'
// values are in RFC-010's Default Axis Profile, and each label's args is a
// JSON object holding the tool's required top-level parameters. It reads
// only the corpus's files; it never runs the classifier.
func TestCorpusLabelsComplete(t *testing.T) {
	dir := filepath.Join("testdata", "corpus")
	servers, err := filepath.Glob(filepath.Join(dir, "servers", "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(servers) == 0 {
		t.Fatalf("no servers in %s/servers", dir)
	}
	seen := map[string]bool{}
	tools := 0
	for _, path := range servers {
		id := strings.TrimSuffix(filepath.Base(path), ".json")
		seen[id] = true
		t.Run(id, func(t *testing.T) {
			tools += checkCorpusServer(t, dir, id)
		})
	}
	labels, err := filepath.Glob(filepath.Join(dir, "labels", "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range labels {
		if id := strings.TrimSuffix(filepath.Base(path), ".json"); !seen[id] {
			t.Errorf("%s: labels for server %q, which has no servers/%s.json", path, id, id)
		}
	}
	t.Logf("%d servers, %d tools labelled", len(servers), tools)
}

// checkCorpusServer checks one server's two files and returns how many
// tools it labels.
func checkCorpusServer(t *testing.T, dir, id string) int {
	t.Helper()
	if !corpusID.MatchString(id) {
		t.Errorf("server id %q: want lower-case [a-z0-9-]+", id)
	}
	var s corpusServerFile
	readCorpusJSON(t, filepath.Join(dir, "servers", id+".json"), &s)
	if s.Spec.ID != id {
		t.Errorf("spec.id is %q, want %q (the file's name)", s.Spec.ID, id)
	}
	if !corpusSource.MatchString(s.Spec.Source) {
		t.Errorf("spec.source is %q, want npm:PKG@VERSION or go:MODULE@VERSION", s.Spec.Source)
	}
	if len(s.Spec.Command) == 0 {
		t.Errorf("spec.command is empty")
	}
	if !corpusKinds[s.Spec.Kind] {
		t.Errorf("spec.kind is %q, want official, vendor or community", s.Spec.Kind)
	}
	if s.Recorded == nil {
		t.Fatalf("servers/%s.json has no recording: run go run ./internal/corpus/collect on it", id)
	}
	if len(s.Recorded.Tools) == 0 {
		t.Errorf("the recording lists no tools")
	}
	required := map[string][]string{}
	for _, tool := range s.Recorded.Tools {
		if _, dup := required[tool.Name]; dup {
			t.Errorf("tool %q recorded twice", tool.Name)
		}
		required[tool.Name] = tool.InputSchema.Required
	}

	var l corpusLabelsFile
	readCorpusJSON(t, filepath.Join(dir, "labels", id+".json"), &l)
	if l.Server != id {
		t.Errorf("labels: server is %q, want %q", l.Server, id)
	}
	if strings.TrimSpace(l.Labeller) == "" {
		t.Errorf("labels: labeller is empty, want who labelled and when")
	}
	if l.UpstreamZone != "" && !corpusBoundaries[l.UpstreamZone] {
		t.Errorf("labels: upstream_zone is %q, want empty, Local, Intra-org or External", l.UpstreamZone)
	}
	labelled := map[string]bool{}
	for _, lt := range l.Tools {
		req, recorded := required[lt.Name]
		switch {
		case !recorded:
			t.Errorf("label for tool %q, which the recording does not list", lt.Name)
			continue
		case labelled[lt.Name]:
			t.Errorf("tool %q labelled twice", lt.Name)
		}
		labelled[lt.Name] = true
		if !corpusActionTypes[lt.ActionType] {
			t.Errorf("%s: action_type is %q, want Read, Write, Execute, Provision or Orchestrate", lt.Name, lt.ActionType)
		}
		if !corpusBoundaries[lt.Boundary] {
			t.Errorf("%s: boundary is %q, want Local, Intra-org or External", lt.Name, lt.Boundary)
		}
		var args map[string]json.RawMessage
		if err := json.Unmarshal(lt.Args, &args); err != nil || args == nil {
			t.Errorf("%s: args is %s, want a JSON object", lt.Name, bytes.TrimSpace(lt.Args))
			continue
		}
		for _, p := range req {
			if _, ok := args[p]; !ok {
				t.Errorf("%s: args lacks %q, which the tool's inputSchema requires", lt.Name, p)
			}
		}
	}
	var missing []string
	for name := range required {
		if !labelled[name] {
			missing = append(missing, name)
		}
	}
	sort.Strings(missing)
	for _, name := range missing {
		t.Errorf("tool %q is recorded but not labelled", name)
	}
	return len(labelled)
}

func readCorpusJSON(t *testing.T, path string, v any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}
