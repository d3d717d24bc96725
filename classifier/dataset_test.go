package classifier

import (
	"context"
	"fmt"
	"os"
	"sort"
	"strings"
	"testing"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/sluicehq/sluice/intercept"
)

// labelledTool is one entry of testdata/tools.json.
type labelledTool struct {
	Server       string         `json:"server"`
	Source       string         `json:"source"`
	Upstream     string         `json:"upstream"`
	Target       string         `json:"target"`
	UpstreamZone string         `json:"upstream_zone"`
	Name         string         `json:"name"`
	Description  string         `json:"description"`
	Annotations  jsontext.Value `json:"annotations"`
	Args         jsontext.Value `json:"args"`
	Want         struct {
		ActionType string `json:"action_type"`
		Boundary   string `json:"boundary"`
	} `json:"want"`
	Comment string `json:"comment"`
}

func loadTools(t testing.TB) []labelledTool {
	t.Helper()
	b, err := os.ReadFile("testdata/tools.json")
	if err != nil {
		t.Fatal(err)
	}
	var file struct {
		Tools []labelledTool `json:"tools"`
	}
	if err := json.Unmarshal(b, &file); err != nil {
		t.Fatalf("testdata/tools.json: %v", err)
	}
	return file.Tools
}

func (lt *labelledTool) descriptor() *intercept.ActionDescriptor {
	params := lt.Args
	if len(params) == 0 {
		params = jsontext.Value(`{}`)
	}
	return &intercept.ActionDescriptor{
		TxnID:           "txn",
		ToolName:        lt.Name,
		ToolDescription: lt.Description,
		Parameters:      params,
		TargetEndpoint:  lt.Target,
		SessionID:       "s1",
		Upstream:        lt.Upstream,
		Annotations:     lt.Annotations,
	}
}

// datasetOptions is what an operator of these servers would configure:
// only the zones no tool definition can reveal.
func datasetOptions(tools []labelledTool) Options {
	opts := Options{Upstreams: map[string]UpstreamConfig{}}
	for _, lt := range tools {
		if lt.UpstreamZone != "" {
			opts.Upstreams[lt.Upstream] = UpstreamConfig{Zone: lt.UpstreamZone}
		}
	}
	return opts
}

// TestBuiltinAccuracy measures the built-in classifier on real tool
// definitions (testdata/tools.json) and fails below 95 % on action type or
// boundary. Run with -v to see the per-server table and every miss.
func TestBuiltinAccuracy(t *testing.T) {
	tools := loadTools(t)
	if len(tools) < 200 {
		t.Fatalf("got %d labelled tools, want at least 200", len(tools))
	}
	b, err := NewBuiltin(datasetOptions(tools))
	if err != nil {
		t.Fatal(err)
	}
	type tally struct{ n, action, boundary int }
	per := map[string]*tally{}
	var all tally
	var misses []string
	confusion := map[string]int{}
	for _, lt := range tools {
		v, err := b.Classify(context.Background(), lt.descriptor())
		if err != nil {
			t.Fatalf("%s/%s: %v", lt.Server, lt.Name, err)
		}
		s := per[lt.Server]
		if s == nil {
			s = &tally{}
			per[lt.Server] = s
		}
		s.n++
		all.n++
		at, bd := v.Axes.Get(AxisActionType), v.Axes.Get(AxisBoundary)
		if at.Classified == lt.Want.ActionType {
			s.action++
			all.action++
		} else {
			confusion[lt.Want.ActionType+"→"+at.Classified]++
			misses = append(misses, fmt.Sprintf("action_type %s/%s: got %s (%.2f, %s), want %s  %s", lt.Server, lt.Name, at.Classified, at.Confidence, at.Source, lt.Want.ActionType, lt.Comment))
		}
		if bd.Classified == lt.Want.Boundary {
			s.boundary++
			all.boundary++
		} else {
			misses = append(misses, fmt.Sprintf("boundary %s/%s: got %s (%.2f, %s), want %s  %s", lt.Server, lt.Name, bd.Classified, bd.Confidence, bd.Source, lt.Want.Boundary, lt.Comment))
		}
	}
	pct := func(k, n int) float64 { return 100 * float64(k) / float64(n) }
	servers := make([]string, 0, len(per))
	for s := range per {
		servers = append(servers, s)
	}
	sort.Strings(servers)
	var tbl strings.Builder
	fmt.Fprintf(&tbl, "%-22s %5s %12s %12s\n", "server", "tools", "action_type", "boundary")
	for _, s := range servers {
		x := per[s]
		fmt.Fprintf(&tbl, "%-22s %5d %11.1f%% %11.1f%%\n", s, x.n, pct(x.action, x.n), pct(x.boundary, x.n))
	}
	t.Logf("per server:\n%s", tbl.String())
	for _, m := range misses {
		t.Log(m)
	}
	t.Logf("action_type confusion (want→got): %v", confusion)
	actionAcc, boundaryAcc := pct(all.action, all.n), pct(all.boundary, all.n)
	fmt.Printf("TestBuiltinAccuracy: %d tools from %d servers: action_type %.1f%% (%d/%d), boundary %.1f%% (%d/%d)\n",
		all.n, len(per), actionAcc, all.action, all.n, boundaryAcc, all.boundary, all.n)
	if actionAcc < 95 {
		t.Errorf("action_type accuracy: got %.1f%%, want at least 95%%", actionAcc)
	}
	if boundaryAcc < 95 {
		t.Errorf("boundary accuracy: got %.1f%%, want at least 95%%", boundaryAcc)
	}
}
