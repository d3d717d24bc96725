package recommend

import (
	"bytes"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/sluicehq/sluice/policy"
)

// Doc is what the engine needs to know of the policy: its version, its
// manifests, its tool classes and the tools it allows by name.
type Doc struct {
	Version     string
	Manifests   map[string]Manifest
	ToolClasses map[string][]string
	Allow       []string
	// src is the document as read (ParseDoc); nil for a Doc made
	// otherwise.
	src []byte
}

// Manifest is one agent's manifest.
type Manifest struct {
	AllowedClasses  []string `yaml:"allowed_classes"`
	BoundaryCeiling string   `yaml:"boundary_ceiling"`
}

// ParseDoc reads a policy document: a bare policy or a file with a
// top-level policy: key. It must compile.
func ParseDoc(src []byte, filename string) (*Doc, error) {
	p, err := policy.Compile(src, filename, policy.Options{})
	if err != nil {
		return nil, err
	}
	_, pol, err := policyNode(src)
	if err != nil {
		return nil, err
	}
	var raw struct {
		Manifests   map[string]Manifest `yaml:"manifests"`
		ToolClasses map[string][]string `yaml:"tool_classes"`
		Allow       []string            `yaml:"allow"`
	}
	if err := pol.Decode(&raw); err != nil {
		return nil, fmt.Errorf("%s: %w", filename, err)
	}
	d := &Doc{Version: p.Version(), Manifests: raw.Manifests, ToolClasses: raw.ToolClasses, Allow: raw.Allow, src: src}
	if d.Manifests == nil {
		d.Manifests = map[string]Manifest{}
	}
	if d.ToolClasses == nil {
		d.ToolClasses = map[string][]string{}
	}
	return d, nil
}

// policyNode returns the document node and the policy mapping in it.
func policyNode(src []byte) (*yaml.Node, *yaml.Node, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(src, &doc); err != nil {
		return nil, nil, err
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) == 0 || doc.Content[0].Kind != yaml.MappingNode {
		return nil, nil, errors.New("the policy is not a YAML mapping")
	}
	m := doc.Content[0]
	if v := mapValue(m, "policy"); v != nil {
		if v.Kind != yaml.MappingNode {
			return nil, nil, errors.New("policy: is not a mapping")
		}
		return &doc, v, nil
	}
	return &doc, m, nil
}

func mapValue(m *yaml.Node, key string) *yaml.Node {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i+1]
		}
	}
	return nil
}

// child returns m[key], adding an empty node of kind when there is none.
func child(m *yaml.Node, key string, kind yaml.Kind) (*yaml.Node, error) {
	if v := mapValue(m, key); v != nil {
		if v.Kind != kind {
			return nil, fmt.Errorf("%s is not a %s", key, kindName(kind))
		}
		return v, nil
	}
	v := &yaml.Node{Kind: kind}
	if kind == yaml.MappingNode || kind == yaml.SequenceNode {
		v.Tag = map[yaml.Kind]string{yaml.MappingNode: "!!map", yaml.SequenceNode: "!!seq"}[kind]
	}
	m.Content = append(m.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: key}, v)
	return v, nil
}

// at walks from m along keys, adding mappings where there are none, and
// returns the last key's node, added as a node of kind if missing.
func at(m *yaml.Node, kind yaml.Kind, keys ...string) (*yaml.Node, error) {
	n := m
	for i, k := range keys {
		want := yaml.MappingNode
		if i == len(keys)-1 {
			want = kind
		}
		var err error
		if n, err = child(n, k, want); err != nil {
			return nil, err
		}
	}
	return n, nil
}

func kindName(k yaml.Kind) string {
	switch k {
	case yaml.MappingNode:
		return "mapping"
	case yaml.SequenceNode:
		return "list"
	}
	return "scalar"
}

func scalar(s string) *yaml.Node { return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: s} }

// seedPinned gives a new upstream-pinned entry tool_classes["up/tool"]
// the classes of the bare entry tool_classes["tool"], which it will take
// precedence over: adding a class must not drop the ones the tool has
// (a deny rule on vcs:destructive would stop applying to it).
func seedPinned(pol *yaml.Node, key string) {
	_, bare, pinned := strings.Cut(key, "/")
	tc := mapValue(pol, "tool_classes")
	if !pinned || tc == nil || tc.Kind != yaml.MappingNode || mapValue(tc, key) != nil {
		return
	}
	from := mapValue(tc, bare)
	if from == nil || from.Kind != yaml.SequenceNode {
		return
	}
	seq := &yaml.Node{Kind: yaml.SequenceNode, Style: from.Style}
	for _, n := range from.Content {
		seq.Content = append(seq.Content, scalar(n.Value))
	}
	tc.Content = append(tc.Content, scalar(key), seq)
}

// seedManifest gives an agent's new manifest a copy of the default one
// ("*"), which it will replace for that agent: a change meant to narrow
// (a lower boundary ceiling) or add one class must not drop the default's
// other limits.
func seedManifest(pol *yaml.Node, agent string) {
	ms := mapValue(pol, "manifests")
	if agent == "*" || ms == nil || ms.Kind != yaml.MappingNode || mapValue(ms, agent) != nil {
		return
	}
	def := mapValue(ms, "*")
	if def == nil || def.Kind != yaml.MappingNode {
		return
	}
	ms.Content = append(ms.Content, scalar(agent), deepCopy(def))
}

// ceilingOf is the level of the boundary ceiling that applies to agent:
// its manifest's, or the default manifest's ("*") when it has none; 0 for
// none.
func ceilingOf(pol *yaml.Node, agent string) int {
	ms := mapValue(pol, "manifests")
	if ms == nil || ms.Kind != yaml.MappingNode {
		return 0
	}
	m := mapValue(ms, agent)
	if m == nil {
		m = mapValue(ms, anyAgent)
	}
	if m == nil || m.Kind != yaml.MappingNode {
		return 0
	}
	if c := mapValue(m, "boundary_ceiling"); c != nil {
		return boundaryLevel(c.Value)
	}
	return 0
}

func deepCopy(n *yaml.Node) *yaml.Node {
	c := *n
	c.Content = make([]*yaml.Node, len(n.Content))
	for i, k := range n.Content {
		c.Content[i] = deepCopy(k)
	}
	return &c
}

func addToList(seq *yaml.Node, values ...string) {
	for _, v := range values {
		if !slices.ContainsFunc(seq.Content, func(n *yaml.Node) bool { return n.Value == v }) {
			seq.Content = append(seq.Content, scalar(v))
		}
	}
}

// Apply returns src with r's change made. The result is checked to
// compile; comments and the order of everything else are kept.
func Apply(src []byte, r Recommendation) ([]byte, error) {
	doc, pol, err := policyNode(src)
	if err != nil {
		return nil, err
	}
	c := r.Change
	bad := func() error { return fmt.Errorf("recommendation %s: cannot %s %s", r.ID, c.Operation, c.Field()) }
	switch {
	case len(c.Path) == 3 && c.Path[0] == "manifests" && c.Path[2] == "allowed_classes" && c.Operation == "add":
		seedManifest(pol, c.Path[1])
		seq, err := at(pol, yaml.SequenceNode, c.Path...)
		if err != nil {
			return nil, err
		}
		addToList(seq, toStrings(c.Value)...)
	case len(c.Path) == 3 && c.Path[0] == "manifests" && c.Path[2] == "boundary_ceiling" && c.Operation == "set":
		if was, now := ceilingOf(pol, c.Path[1]), boundaryLevel(fmt.Sprint(c.Value)); was != 0 && (now == 0 || now > was) {
			return nil, fmt.Errorf("recommendation %s: %s's boundary ceiling is %s, and %v would raise it: %w",
				r.ID, c.Path[1], boundaryNames[was], c.Value, ErrWidens)
		}
		seedManifest(pol, c.Path[1])
		v, err := at(pol, yaml.ScalarNode, c.Path...)
		if err != nil {
			return nil, err
		}
		v.Tag, v.Value = "!!str", fmt.Sprint(c.Value)
	case len(c.Path) == 1 && c.Path[0] == "rules" && c.Operation == "add":
		seq, err := at(pol, yaml.SequenceNode, "rules")
		if err != nil {
			return nil, err
		}
		var n yaml.Node
		rule, ok := c.Value.(map[string]any)
		if !ok {
			return nil, bad()
		}
		withID := map[string]any{"id": r.ID}
		for k, v := range rule {
			withID[k] = v
		}
		if err := n.Encode(withID); err != nil {
			return nil, err
		}
		seq.Content = append(seq.Content, &n)
	case len(c.Path) == 1 && c.Path[0] == "allow" && c.Operation == "remove":
		seq := mapValue(pol, "allow")
		if seq == nil || seq.Kind != yaml.SequenceNode {
			return nil, bad()
		}
		seq.Content = slices.DeleteFunc(seq.Content, func(n *yaml.Node) bool { return n.Value == fmt.Sprint(c.Value) })
	case len(c.Path) == 2 && c.Path[0] == "tool_classes" && c.Operation == "add":
		seedPinned(pol, c.Path[1])
		seq, err := at(pol, yaml.SequenceNode, c.Path...)
		if err != nil {
			return nil, err
		}
		addToList(seq, fmt.Sprint(c.Value))
	case len(c.Path) == 1 && c.Path[0] == "tool_classes" && c.Operation == "add":
		v, ok := c.Value.(map[string]any)
		if !ok {
			return nil, bad()
		}
		for _, tool := range toStrings(v["tools"]) {
			seedPinned(pol, tool)
			seq, err := at(pol, yaml.SequenceNode, "tool_classes", tool)
			if err != nil {
				return nil, err
			}
			addToList(seq, fmt.Sprint(v["class"]))
		}
	default:
		return nil, bad()
	}
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(doc); err != nil {
		return nil, err
	}
	if err := enc.Close(); err != nil {
		return nil, err
	}
	p, err := policy.Compile(buf.Bytes(), "recommended policy", policy.Options{})
	if err != nil {
		return nil, fmt.Errorf("recommendation %s: the changed policy does not compile: %w", r.ID, err)
	}
	if tools := classChanged(r); len(tools) > 0 {
		old, err := policy.Compile(src, "policy", policy.Options{})
		if err != nil {
			return nil, err
		}
		var raw struct {
			Manifests map[string]Manifest `yaml:"manifests"`
		}
		_ = pol.Decode(&raw)
		if err := widens(old, p, r, raw.Manifests, tools); err != nil {
			return nil, err
		}
	}
	// The encoder quotes class names ('source:local') that the author
	// wrote plain; unquote them when that reads back the same, so the diff
	// shows only the change.
	plain := keepLines(src, quotedClass.ReplaceAll(buf.Bytes(), []byte("$1")))
	if q, err := policy.Compile(plain, "recommended policy", policy.Options{}); err == nil && q.Version() == p.Version() {
		return plain, nil
	}
	return buf.Bytes(), nil
}

// keepLines puts back the author's own spacing: an output line that
// differs from a source line only in runs of spaces becomes that line.
func keepLines(src, out []byte) []byte {
	norm := func(l string) string {
		return strings.Join(strings.Fields(l), " ") + "|" + fmt.Sprint(len(l)-len(strings.TrimLeft(l, " ")))
	}
	orig := map[string]string{}
	for _, l := range strings.Split(string(src), "\n") {
		if _, dup := orig[norm(l)]; !dup {
			orig[norm(l)] = l
		}
	}
	lines := strings.Split(string(out), "\n")
	for i, l := range lines {
		if o, ok := orig[norm(l)]; ok {
			lines[i] = o
		}
	}
	return []byte(strings.Join(lines, "\n"))
}

var quotedClass = regexp.MustCompile(`'([A-Za-z][\w.-]*:[\w.*/-]+)'`)

// toStrings reads a value that is a string or a list of strings (as it
// comes from Go or back from JSON).
func toStrings(v any) []string {
	switch v := v.(type) {
	case string:
		return []string{v}
	case []string:
		return v
	case []any:
		out := make([]string, 0, len(v))
		for _, x := range v {
			out = append(out, fmt.Sprint(x))
		}
		return out
	}
	return nil
}

// Diff is a line diff of a and b: unchanged lines start with two spaces,
// removed ones with "- ", added ones with "+ "; runs of more than three
// unchanged lines away from a change are left out ("…").
func Diff(a, b []byte) string {
	x, y := strings.Split(strings.TrimRight(string(a), "\n"), "\n"), strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	// Longest common subsequence, from the end.
	lcs := make([][]int, len(x)+1)
	for i := range lcs {
		lcs[i] = make([]int, len(y)+1)
	}
	for i := len(x) - 1; i >= 0; i-- {
		for j := len(y) - 1; j >= 0; j-- {
			if x[i] == y[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	type line struct {
		op   byte
		text string
	}
	var lines []line
	i, j := 0, 0
	for i < len(x) || j < len(y) {
		switch {
		case i < len(x) && j < len(y) && x[i] == y[j]:
			lines = append(lines, line{' ', x[i]})
			i, j = i+1, j+1
		case j < len(y) && (i == len(x) || lcs[i][j+1] >= lcs[i+1][j]):
			lines = append(lines, line{'+', y[j]})
			j++
		default:
			lines = append(lines, line{'-', x[i]})
			i++
		}
	}
	near := make([]bool, len(lines))
	for k, l := range lines {
		if l.op != ' ' {
			for d := max(0, k-3); d <= min(len(lines)-1, k+3); d++ {
				near[d] = true
			}
		}
	}
	var b2 strings.Builder
	skipped := false
	for k, l := range lines {
		if !near[k] {
			if !skipped {
				b2.WriteString("  …\n")
				skipped = true
			}
			continue
		}
		skipped = false
		b2.WriteByte(l.op)
		b2.WriteByte(' ')
		b2.WriteString(l.text)
		b2.WriteByte('\n')
	}
	return b2.String()
}
