package classifier

import (
	"context"
	"fmt"
	"hash/fnv"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/sluicehq/sluice/intercept"
)

// corpusCall is one labelled call of the real-world corpus
// (testdata/corpus): a recorded tool, the labeller's arguments and labels.
type corpusCall struct {
	server, kind string
	heldOut      bool
	batch        string // the spec's batch: servers added together and scored once
	d            *intercept.ActionDescriptor
	zone         string   // the label file's upstream_zone
	envNames     []string // the names of the spec's env (its values are placeholders)
	want         [2]string
}

// corpusFold is fnv32a(id) % 5; folds 3 and 4 are held out.
func corpusFold(id string) uint32 {
	h := fnv.New32a()
	h.Write([]byte(id))
	return h.Sum32() % 5
}

func loadCorpus(t testing.TB) []corpusCall {
	t.Helper()
	dir := filepath.Join("testdata", "corpus")
	files, err := filepath.Glob(filepath.Join(dir, "servers", "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no corpus servers in %s: %v", dir, err)
	}
	var out []corpusCall
	for _, path := range files {
		var srv struct {
			Spec struct {
				ID      string            `json:"id"`
				Kind    string            `json:"kind"`
				Command []string          `json:"command"`
				Env     map[string]string `json:"env"`
				Batch   string            `json:"batch"`
			} `json:"spec"`
			Recorded struct {
				Tools []struct {
					Name        string         `json:"name"`
					Description string         `json:"description"`
					InputSchema jsontext.Value `json:"inputSchema"`
					Annotations jsontext.Value `json:"annotations"`
				} `json:"tools"`
			} `json:"recorded"`
		}
		readJSON(t, path, &srv)
		var lab struct {
			UpstreamZone string `json:"upstream_zone"`
			Tools        []struct {
				Name       string         `json:"name"`
				Args       jsontext.Value `json:"args"`
				ActionType string         `json:"action_type"`
				Boundary   string         `json:"boundary"`
			} `json:"tools"`
		}
		readJSON(t, filepath.Join(dir, "labels", srv.Spec.ID+".json"), &lab)
		labels := map[string]int{}
		for i, l := range lab.Tools {
			labels[l.Name] = i
		}
		id := srv.Spec.ID
		envNames := slices.Sorted(mapsKeys(srv.Spec.Env))
		if envNames == nil {
			envNames = []string{} // known: none
		}
		for _, tool := range srv.Recorded.Tools {
			i, ok := labels[tool.Name]
			if !ok {
				t.Fatalf("%s: tool %s has no label", id, tool.Name)
			}
			l := lab.Tools[i]
			args := l.Args
			if len(args) == 0 {
				args = jsontext.Value("{}")
			}
			out = append(out, corpusCall{
				server: id, kind: srv.Spec.Kind, heldOut: corpusFold(id) >= 3, batch: srv.Spec.Batch, zone: lab.UpstreamZone,
				envNames: envNames,
				want:     [2]string{l.ActionType, l.Boundary},
				d: &intercept.ActionDescriptor{
					TxnID: "txn", Method: "tools/call", ToolName: tool.Name, ToolDescription: tool.Description,
					Parameters: args, TargetEndpoint: "stdio:" + strings.Join(srv.Spec.Command, " "),
					SessionID: "s1", Upstream: id, Annotations: tool.Annotations, InputSchema: tool.InputSchema,
				},
			})
		}
	}
	return out
}

func readJSON(t testing.TB, path string, v any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

// corpusOptions is what the operator of server id would configure: the
// trust zone of an upstream whose target only its environment names, and
// the names of the environment it is started with (the spec's env: the
// collector gives a server what it needs to start, with placeholder
// values, which are not read).
func corpusOptions(calls []corpusCall) Options {
	opts := Options{Upstreams: map[string]UpstreamConfig{}}
	for _, c := range calls {
		opts.Upstreams[c.server] = UpstreamConfig{Zone: c.zone, EnvNames: c.envNames}
	}
	return opts
}

// scored is one call's verdict next to its labels.
type scored struct {
	corpusCall
	got  [2]string
	conf [2]float64
	src  [2]string
}

// classifyCorpus classifies every call, each server by a classifier of its
// own. No server is scored with knowledge taken from itself because the
// classifier holds none (testdata/corpus/README.md, Discipline).
func classifyCorpus(t testing.TB, calls []corpusCall) []scored {
	t.Helper()
	return classifyCorpusFitted(t, calls, fittedConfidence)
}

// classifyCorpusFitted is classifyCorpus with the given table of fitted
// confidences; nil scores every call with its rule's own claim.
func classifyCorpusFitted(t testing.TB, calls []corpusCall, fitted map[rulePath]float64) []scored {
	t.Helper()
	byServer := map[string][]corpusCall{}
	for _, c := range calls {
		byServer[c.server] = append(byServer[c.server], c)
	}
	base := corpusOptions(calls)
	if os.Getenv("SLUICE_CORPUS_KB") == "strict" {
		withoutCorpusServices(t, slices.Collect(mapsKeys(byServer)))
	}
	var out []scored
	for _, server := range slices.Sorted(mapsKeys(byServer)) {
		b, err := NewBuiltin(base)
		if err != nil {
			t.Fatal(err)
		}
		b.c.fitted = fitted
		for _, c := range byServer[server] {
			v, err := b.Classify(context.Background(), c.d)
			if err != nil {
				t.Fatal(err)
			}
			at, bd := v.Axes.Get(AxisActionType), v.Axes.Get(AxisBoundary)
			out = append(out, scored{corpusCall: c, got: [2]string{at.Classified, bd.Classified}, conf: [2]float64{at.Confidence, bd.Confidence}, src: [2]string{at.Source, bd.Source}})
		}
	}
	return out
}

// withoutCorpusServices takes out of the knowledge base, until the test
// ends, every service a word of which (three letters or more) is in the
// id of a corpus server: the table as it would be had no service any
// corpus server fronts been named (SLUICE_CORPUS_KB=strict; see
// testdata/corpus/README.md, Discipline).
func withoutCorpusServices(t testing.TB, ids []string) {
	saved := knownServices
	t.Cleanup(func() { knownServices, externalServices = saved, serviceWords() })
	names := func(id string) string {
		return strings.ToLower(id) + " " + strings.NewReplacer("-", "", "_", "").Replace(strings.ToLower(id))
	}
	var all strings.Builder
	for _, id := range ids {
		all.WriteString(names(id) + " ")
	}
	removed := 0
	for i, s := range knownServices {
		for _, w := range append(strings.Fields(s.also), s.name) {
			if len(w) >= 3 && strings.Contains(all.String(), w) {
				knownServices[i] = knownService{}
				removed++
				break
			}
		}
	}
	externalServices = serviceWords()
	delete(externalServices, "")
	t.Logf("knowledge base without the %d services a corpus server's id names", removed)
}

func mapsKeys[M ~map[string]V, V any](m M) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// Floors of TestCorpusLeaveOneServerOut: what the held-out split reached
// when they were set (the boundary's 0.9 band at 0.935 with the fitted
// confidences of calibration.go, review cls58). The targets are
// 0.95 accuracy on both axes and 0.97 in the 0.9 band.
const (
	corpusFloorActionType = 0.88
	corpusFloorBoundary   = 0.85

	corpusFloorCalibAction   = 0.96
	corpusFloorCalibBoundary = 0.93
)

// TestCorpusLeaveOneServerOut measures the built-in classifier on the
// real-world corpus, every server scored with no knowledge taken from it,
// and prints per-axis accuracy by split and kind, the confusion matrices
// of the held-out split, and the calibration curve. Run it with
//
//	go test ./classifier -run TestCorpusLeaveOneServerOut -v
func TestCorpusLeaveOneServerOut(t *testing.T) {
	res := classifyCorpus(t, loadCorpus(t))
	var sb strings.Builder
	acc := func(filter func(scored) bool) (n int, a [2]float64) {
		var ok [2]int
		for _, r := range res {
			if !filter(r) {
				continue
			}
			n++
			for ax := range 2 {
				if r.got[ax] == r.want[ax] {
					ok[ax]++
				}
			}
		}
		for ax := range 2 {
			a[ax] = float64(ok[ax]) / float64(max(n, 1))
		}
		return n, a
	}
	servers := func(filter func(scored) bool) int {
		s := map[string]bool{}
		for _, r := range res {
			if filter(r) {
				s[r.server] = true
			}
		}
		return len(s)
	}
	fmt.Fprintf(&sb, "\n%-26s %8s %7s %12s %9s\n", "split", "servers", "calls", "action_type", "boundary")
	row := func(name string, f func(scored) bool) [2]float64 {
		n, a := acc(f)
		fmt.Fprintf(&sb, "%-26s %8d %7d %12.3f %9.3f\n", name, servers(f), n, a[0], a[1])
		return a
	}
	row("all", func(scored) bool { return true })
	row("dev (folds 0-2)", func(r scored) bool { return !r.heldOut })
	held := row("held-out (folds 3-4)", func(r scored) bool { return r.heldOut })
	for _, kind := range []string{"official", "vendor", "community"} {
		row("held-out, "+kind, func(r scored) bool { return r.heldOut && r.kind == kind })
	}
	// A batch (the spec's "batch") is servers added together, labelled
	// before the classifier was run on them: its row was a first look
	// when the batch was added, whatever fold its servers fall in
	// (they count in their folds above as well).
	batches := map[string]bool{}
	for _, r := range res {
		if r.batch != "" {
			batches[r.batch] = true
		}
	}
	for _, b := range slices.Sorted(mapsKeys(batches)) {
		in := func(r scored) bool { return r.batch == b }
		row("first look "+b, in)
		fmt.Fprintf(&sb, "%-26s", "  its calls scored >= 0.9")
		for ax, axis := range []string{AxisActionType, AxisBoundary} {
			n, ok := 0, 0
			for _, r := range res {
				if in(r) && r.conf[ax] >= 0.9 {
					n++
					if r.got[ax] == r.want[ax] {
						ok++
					}
				}
			}
			fmt.Fprintf(&sb, " %s %d, right %.3f;", axis, n, float64(ok)/float64(max(n, 1)))
		}
		sb.WriteByte('\n')
	}

	for ax, axis := range []string{AxisActionType, AxisBoundary} {
		fmt.Fprintf(&sb, "\nheld-out confusion, %s (rows: label, columns: verdict)\n", axis)
		vals := map[string]bool{}
		m := map[[2]string]int{}
		for _, r := range res {
			if r.heldOut {
				vals[r.want[ax]], vals[r.got[ax]] = true, true
				m[[2]string{r.want[ax], r.got[ax]}]++
			}
		}
		cols := slices.Sorted(mapsKeys(vals))
		fmt.Fprintf(&sb, "%-12s", "")
		for _, c := range cols {
			fmt.Fprintf(&sb, "%12s", c)
		}
		sb.WriteByte('\n')
		for _, w := range cols {
			fmt.Fprintf(&sb, "%-12s", w)
			for _, c := range cols {
				fmt.Fprintf(&sb, "%12d", m[[2]string{w, c}])
			}
			sb.WriteByte('\n')
		}
	}

	fmt.Fprintf(&sb, "\ncalibration (all calls): accuracy by confidence\n%-12s %14s %14s\n", "confidence", "action_type", "boundary")
	buckets := []float64{0, 0.5, 0.7, 0.8, 0.9, 0.95, 1.01}
	for i := 0; i+1 < len(buckets); i++ {
		fmt.Fprintf(&sb, "[%.2f,%.2f)", buckets[i], min(buckets[i+1], 1))
		for ax := range 2 {
			n, ok := 0, 0
			for _, r := range res {
				if r.conf[ax] >= buckets[i] && r.conf[ax] < buckets[i+1] {
					n++
					if r.got[ax] == r.want[ax] {
						ok++
					}
				}
			}
			fmt.Fprintf(&sb, " %6.3f (%5d)", float64(ok)/float64(max(n, 1)), n)
		}
		sb.WriteByte('\n')
	}
	var calib [2]float64 // held-out accuracy of the calls scored >= 0.9
	for ax, axis := range []string{AxisActionType, AxisBoundary} {
		n, ok, hn, hok := 0, 0, 0, 0
		for _, r := range res {
			if r.conf[ax] >= 0.9 && r.heldOut {
				hn++
				if r.got[ax] == r.want[ax] {
					hok++
				}
			}
			if r.conf[ax] >= 0.9 {
				n++
				if r.got[ax] == r.want[ax] {
					ok++
				}
			}
		}
		fmt.Fprintf(&sb, "%s: %d of %d calls scored >= 0.9 (%.0f %%), right on %.3f of them; held-out: %d, right on %.3f\n", axis, n, len(res), 100*float64(n)/float64(len(res)), float64(ok)/float64(max(n, 1)), hn, float64(hok)/float64(max(hn, 1)))
		calib[ax] = float64(hok) / float64(max(hn, 1))
	}
	// Floors at what is reached today (the issue asks for 0.97 on both).
	if calib[0] < corpusFloorCalibAction || calib[1] < corpusFloorCalibBoundary {
		belowFloor(t, "held-out calls scored >= 0.9 are right on %.3f / %.3f, below the floors %.3f / %.3f", calib[0], calib[1], corpusFloorCalibAction, corpusFloorCalibBoundary)
	}
	t.Log(sb.String())

	if os.Getenv("SLUICE_CORPUS_MISSES") == "dev" {
		// Misses of the dev split only: the held-out ones are not read
		// while tuning (testdata/corpus/README.md).
		var lines []string
		for _, r := range res {
			if !r.heldOut && r.got != r.want {
				lines = append(lines, fmt.Sprintf("%s/%s: want %v got %v (%.2f %.2f) %.80q", r.server, r.d.ToolName, r.want, r.got, r.conf[0], r.conf[1], r.d.ToolDescription))
			}
		}
		sort.Strings(lines)
		t.Log("dev misses:\n" + strings.Join(lines, "\n"))
		// Accuracy by axis, source and confidence band on the dev split.
		type key struct {
			ax   int
			src  string
			band string
		}
		n, ok := map[key]int{}, map[key]int{}
		for _, r := range res {
			if r.heldOut {
				continue
			}
			for ax := range 2 {
				band := fmt.Sprintf("%.2f", r.conf[ax])
				k := key{ax, r.src[ax], band}
				n[k]++
				if r.got[ax] == r.want[ax] {
					ok[k]++
				}
			}
		}
		var rows []string
		for k, c := range n {
			rows = append(rows, fmt.Sprintf("axis %d %-22s %-6s %5d calls, right %.3f", k.ax, k.src, k.band, c, float64(ok[k])/float64(c)))
		}
		sort.Strings(rows)
		t.Log("dev by source:\n" + strings.Join(rows, "\n"))
		t.Log("dev boundary by evidence:\n" + boundaryEvidenceTable(t, res))
	}
	if held[0] < corpusFloorActionType || held[1] < corpusFloorBoundary {
		belowFloor(t, "held-out accuracy %.3f / %.3f is below the floors %.3f / %.3f", held[0], held[1], corpusFloorActionType, corpusFloorBoundary)
	}
}

// belowFloor fails the test, or only says so with SLUICE_CORPUS_KB=strict:
// the floors are what the shipped knowledge base reaches; the strict run
// measures how much of that the entries naming corpus services make, and
// without them the high-confidence band is expected to be below them.
func belowFloor(t *testing.T, format string, args ...any) {
	t.Helper()
	if os.Getenv("SLUICE_CORPUS_KB") == "strict" {
		t.Logf("(strict knowledge base, floors not applied) "+format, args...)
		return
	}
	t.Errorf(format, args...)
}

// boundaryEvidence names the evidence behind a boundary verdict, finer
// than its source: which fact of the command line, the arguments or the
// configuration set it. It is worked out again from the call, for the
// dev split's breakdown only.
func boundaryEvidence(c *compiled, r scored) string {
	cmd := strings.TrimPrefix(r.d.TargetEndpoint, "stdio:")
	var f argFacts
	c.scanArgs(r.d.Parameters, &f)
	switch r.src[1] {
	case SourceConfig:
		return "upstream zone configured"
	case SourceParameters:
		if f.urlZone != "" {
			return "argument URL (" + f.urlZone + ")"
		}
		return "argument local path"
	case SourceEndpointInference:
		if z, _ := c.commandZone(cmd); z != "" {
			return "command-line URL (" + z + ")"
		}
		id := serverIdentity(cmd)
		ws := words(nil, id)
		switch z, _ := serverZone(id); {
		case z == External && anyIn(ws, docWords):
			return "identity: service docs"
		case z == External:
			return "identity: service name"
		case z == Local && anyIn(ws, externalServices):
			return "identity: capability under a service's scope"
		case z == Local:
			return "identity: local capability"
		case z == IntraOrg:
			return "identity: self-hosted software"
		}
		if commandService(cmd) != "" {
			return "command-line service host"
		}
		for _, w := range words(nil, cmd) {
			if browserWords[w] || externalServices[w] || localStoreEngines[w] {
				return "command words"
			}
		}
		switch c.serverCredential(r.server, cmd) {
		case envCredential:
			return "no service named (prior, credential)"
		case envNone:
			return "no service named (prior, none given)"
		}
		return "no service named (prior)"
	}
	return r.src[1]
}

// boundaryEvidenceTable is the dev split's boundary verdicts by evidence
// and confidence, with how often each is right.
func boundaryEvidenceTable(t testing.TB, res []scored) string {
	calls := make([]corpusCall, len(res))
	for i, r := range res {
		calls[i] = r.corpusCall
	}
	b, err := NewBuiltin(corpusOptions(calls))
	if err != nil {
		t.Fatal(err)
	}
	type key struct {
		ev   string
		conf float64
	}
	n, ok := map[key]int{}, map[key]int{}
	wrong := map[key][]string{}
	// Errors come in servers: a rule wrong for one server is wrong for
	// all its tools. Per server, the share of its calls right, averaged
	// over the servers the rule scored, is the rule's accuracy on a
	// server not yet seen.
	type skey struct {
		key
		server string
	}
	sn, sok := map[skey]int{}, map[skey]int{}
	var hi, hiOK int
	for _, r := range res {
		if r.heldOut {
			continue
		}
		k := key{boundaryEvidence(b.c, r), r.conf[1]}
		n[k]++
		sn[skey{k, r.server}]++
		if r.got[1] == r.want[1] {
			ok[k]++
			sok[skey{k, r.server}]++
		} else if len(wrong[k]) < 4 {
			wrong[k] = append(wrong[k], r.server+"/"+r.d.ToolName)
		}
		if r.conf[1] >= 0.9 {
			hi++
			if r.got[1] == r.want[1] {
				hiOK++
			}
		}
	}
	servers, macro := map[key]int{}, map[key]float64{}
	for sk, c := range sn {
		servers[sk.key]++
		macro[sk.key] += float64(sok[sk]) / float64(c)
	}
	var rows []string
	for k, c := range n {
		rows = append(rows, fmt.Sprintf("%.2f %-46s %5d calls, right %.3f; %3d servers, right %.3f %v", k.conf, k.ev, c, float64(ok[k])/float64(c), servers[k], macro[k]/float64(servers[k]), wrong[k]))
	}
	sort.Sort(sort.Reverse(sort.StringSlice(rows)))
	dev := 0
	for _, r := range res {
		if !r.heldOut {
			dev++
		}
	}
	return strings.Join(rows, "\n") + fmt.Sprintf("\ndev boundary >= 0.9: %d of %d calls (%.0f %%), right on %.3f", hi, dev, 100*float64(hi)/float64(dev), float64(hiOK)/float64(max(hi, 1)))
}
