package policy

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/sluicehq/sluice/internal/spelling"
)

// This file reads the YAML shape of a policy into raw values that still
// carry their YAML nodes, so that compile can name the file, line and path
// of anything it rejects. It walks yaml.v3 nodes itself instead of decoding
// into structs: that way every unknown key is an error that names its full
// path (policy.rules[2].match.match_tol) and the keys that would have been
// accepted, which yaml.v3's KnownFields cannot do.

// ErrInvalid is the sentinel every load error matches with errors.Is.
var ErrInvalid = errors.New("invalid policy")

// A LoadError is one problem in a policy file. Compile joins all it finds
// with errors.Join; each one matches ErrInvalid.
type LoadError struct {
	File   string // the file name given to Compile
	Line   int    // 1-based; 0 when the problem has no single place
	Column int    // 1-based; 0 when unknown
	Path   string // YAML path, e.g. policy.rules[2].match.match_tool
	Msg    string // what is wrong and how to fix it
}

func (e *LoadError) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	if e.Line > 0 {
		fmt.Fprintf(&b, ":%d", e.Line)
		if e.Column > 0 {
			fmt.Fprintf(&b, ":%d", e.Column)
		}
	}
	if e.Path != "" {
		b.WriteString(": ")
		b.WriteString(e.Path)
	}
	b.WriteString(": ")
	b.WriteString(e.Msg)
	return b.String()
}

func (e *LoadError) Unwrap() error { return ErrInvalid }

// maxNodes bounds the nodes a policy may expand to, so that nested YAML
// aliases cannot make loading take exponential time.
const maxNodes = 1 << 20

// loader collects the errors of one Compile.
type loader struct {
	file  string
	errs  []error
	nodes int
}

// maxErrors is how many errors one Compile reports before it gives up.
const maxErrors = 50

func (l *loader) errorf(n *yaml.Node, path, format string, args ...any) {
	if len(l.errs) > maxErrors {
		return
	}
	if len(l.errs) == maxErrors {
		l.errs = append(l.errs, &LoadError{File: l.file, Msg: "too many errors; fix these first"})
		return
	}
	e := &LoadError{File: l.file, Path: path, Msg: fmt.Sprintf(format, args...)}
	if n != nil {
		e.Line, e.Column = n.Line, n.Column
	}
	l.errs = append(l.errs, e)
}

// str is a scalar with the place it came from.
type str struct {
	v    string
	n    *yaml.Node
	path string
}

type rawPolicy struct {
	prefix      string // "policy" when the document nests the policy under that key
	def, mode   *str
	defRead     *str
	toolClasses []rawToolClass
	rules       []rawRule
	routes      []rawRoute
	manifests   []rawManifest
	sugar       [3][]str // by verdict slot: deny, require_approval, allow
}

type rawToolClass struct {
	key     str
	classes []str
}

type rawMatch struct {
	n                        *yaml.Node
	path                     string
	tools, anyOf, allOf, ups []str
}

func (m *rawMatch) empty() bool {
	return len(m.tools)+len(m.anyOf)+len(m.allOf)+len(m.ups) == 0
}

type rawRule struct {
	n                                  *yaml.Node
	path                               string
	id, decision, when, reason, public *str
	mode                               *str
	match                              *rawMatch
}

type rawRoute struct {
	n                                       *yaml.Node
	path                                    string
	id, scope, window, reason, public, mode *str
	after, deny                             *rawMatch
}

type rawManifest struct {
	agent   str
	allowed []str
	hasList bool
	ceiling *str
}

var (
	policyKeys   = []string{"default", "default_read", "result_mode", "tool_classes", "rules", "route_rules", "manifests", "allow", "deny", "require_approval"}
	ruleKeys     = []string{"id", "match", "when", "decision", "reason", "public_reason", "result_mode"}
	routeKeys    = []string{"id", "after", "deny", "scope", "window", "reason", "public_reason", "result_mode"}
	matchKeys    = []string{"match_tool", "match_any_class", "match_all_classes", "upstream"}
	manifestKeys = []string{"allowed_classes", "boundary_ceiling"}
)

var yamlLine = regexp.MustCompile(`line (\d+)`)

// parse reads src into a rawPolicy. A document with a top-level policy key
// is a sluice.yaml (or a policy test file): only that key is read, and its
// siblings belong to whoever reads the rest of the file.
func (l *loader) parse(src []byte) *rawPolicy {
	var doc yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(src))
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			l.errorf(nil, "", "the file is empty; a policy needs at least `default: deny`")
			return nil
		}
		// yaml.v3 reports the line of the construct it was in, which
		// can be a line or two above the mistake.
		e := &LoadError{File: l.file, Msg: "not valid YAML: " + strings.TrimPrefix(err.Error(), "yaml: ")}
		if m := yamlLine.FindStringSubmatch(err.Error()); m != nil {
			e.Line, _ = strconv.Atoi(m[1])
			e.Msg = "not valid YAML (at or after this line): " + strings.TrimPrefix(err.Error(), "yaml: "+m[0]+": ")
		}
		l.errs = append(l.errs, e)
		return nil
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		l.errorf(&extra, "", "the file holds more than one YAML document; put the policy in one")
		return nil
	}
	root := l.deref(&doc)
	if root.Kind == yaml.DocumentNode && len(root.Content) == 1 {
		root = l.deref(root.Content[0])
	}
	rp := &rawPolicy{}
	if root.Kind == yaml.MappingNode {
		for i := 0; i+1 < len(root.Content); i += 2 {
			if k := root.Content[i]; k.Kind == yaml.ScalarNode && k.Value == "policy" {
				rp.prefix = "policy"
				root = l.deref(root.Content[i+1])
				break
			}
		}
	}
	if root.Kind == yaml.ScalarNode && root.Tag == "!!null" {
		l.errorf(root, rp.prefix, "the policy is empty; write at least `default: deny`")
		return nil
	}
	l.mapping(root, rp.prefix, "the policy", policyKeys, func(key string, _, v *yaml.Node, path string) {
		switch key {
		case "default":
			rp.def = l.scalarPtr(v, path, "default")
		case "default_read":
			rp.defRead = l.scalarPtr(v, path, "default_read")
		case "result_mode":
			rp.mode = l.scalarPtr(v, path, "result_mode")
		case "tool_classes":
			l.mapping(v, path, "tool_classes", nil, func(tool string, k, v *yaml.Node, path string) {
				rp.toolClasses = append(rp.toolClasses, rawToolClass{
					key:     str{v: tool, n: k, path: path},
					classes: l.list(v, path, "the classes of a tool"),
				})
			})
		case "rules":
			l.sequence(v, path, "rules", func(n *yaml.Node, path string) {
				if r, ok := l.rule(n, path); ok {
					rp.rules = append(rp.rules, r)
				}
			})
		case "route_rules":
			l.sequence(v, path, "route_rules", func(n *yaml.Node, path string) {
				if r, ok := l.route(n, path); ok {
					rp.routes = append(rp.routes, r)
				}
			})
		case "manifests":
			l.mapping(v, path, "manifests", nil, func(agent string, k, v *yaml.Node, path string) {
				m := rawManifest{agent: str{v: agent, n: k, path: path}}
				l.mapping(v, path, "a manifest", manifestKeys, func(key string, _, v *yaml.Node, path string) {
					switch key {
					case "allowed_classes":
						m.allowed, m.hasList = l.list(v, path, "allowed_classes"), true
					case "boundary_ceiling":
						m.ceiling = l.scalarPtr(v, path, "boundary_ceiling")
					}
				})
				rp.manifests = append(rp.manifests, m)
			})
		case "deny":
			rp.sugar[slotDeny] = l.list(v, path, "deny")
		case "require_approval":
			rp.sugar[slotApproval] = l.list(v, path, "require_approval")
		case "allow":
			rp.sugar[slotAllow] = l.list(v, path, "allow")
		}
	})
	return rp
}

func (l *loader) rule(n *yaml.Node, path string) (rawRule, bool) {
	r := rawRule{n: n, path: path}
	ok := l.mapping(n, path, "a rule", ruleKeys, func(key string, _, v *yaml.Node, path string) {
		switch key {
		case "id":
			r.id = l.scalarPtr(v, path, "id")
		case "match":
			r.match = l.rawMatcher(v, path)
		case "when":
			r.when = l.scalarPtr(v, path, "when")
		case "decision":
			r.decision = l.scalarPtr(v, path, "decision")
		case "reason":
			r.reason = l.scalarPtr(v, path, "reason")
		case "public_reason":
			r.public = l.scalarPtr(v, path, "public_reason")
		case "result_mode":
			r.mode = l.scalarPtr(v, path, "result_mode")
		}
	})
	return r, ok
}

func (l *loader) route(n *yaml.Node, path string) (rawRoute, bool) {
	r := rawRoute{n: n, path: path}
	ok := l.mapping(n, path, "a route rule", routeKeys, func(key string, _, v *yaml.Node, path string) {
		switch key {
		case "id":
			r.id = l.scalarPtr(v, path, "id")
		case "after":
			r.after = l.rawMatcher(v, path)
		case "deny":
			r.deny = l.rawMatcher(v, path)
		case "scope":
			r.scope = l.scalarPtr(v, path, "scope")
		case "window":
			r.window = l.scalarPtr(v, path, "window")
		case "reason":
			r.reason = l.scalarPtr(v, path, "reason")
		case "public_reason":
			r.public = l.scalarPtr(v, path, "public_reason")
		case "result_mode":
			r.mode = l.scalarPtr(v, path, "result_mode")
		}
	})
	return r, ok
}

func (l *loader) rawMatcher(n *yaml.Node, path string) *rawMatch {
	m := &rawMatch{n: n, path: path}
	l.mapping(n, path, "a matcher", matchKeys, func(key string, _, v *yaml.Node, path string) {
		switch key {
		case "match_tool":
			m.tools = l.scalarOrList(v, path, "match_tool")
		case "match_any_class":
			m.anyOf = l.scalarOrList(v, path, "match_any_class")
		case "match_all_classes":
			m.allOf = l.scalarOrList(v, path, "match_all_classes")
		case "upstream":
			m.ups = l.scalarOrList(v, path, "upstream")
		}
	})
	return m
}

// deref follows aliases and counts nodes against maxNodes.
func (l *loader) deref(n *yaml.Node) *yaml.Node {
	for n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	l.nodes++
	return n
}

func (l *loader) tooBig(n *yaml.Node, path string) bool {
	if l.nodes <= maxNodes {
		return false
	}
	if l.nodes < maxNodes+1<<20 { // report once
		l.errorf(n, path, "the policy expands to more than %d YAML nodes (aliases?); write it out plainly", maxNodes)
		l.nodes = maxNodes + 1<<20
	}
	return true
}

// mapping walks a mapping node. known lists the accepted keys; nil accepts
// any key (tool names, agent names). It reports whether n was a mapping.
func (l *loader) mapping(n *yaml.Node, path, what string, known []string, each func(key string, k, v *yaml.Node, path string)) bool {
	n = l.deref(n)
	if n.Kind != yaml.MappingNode {
		l.errorf(n, path, "%s must be a mapping (key: value), not %s", what, describe(n))
		return false
	}
	seen := make(map[string]int, len(n.Content)/2)
	for i := 0; i+1 < len(n.Content); i += 2 {
		if l.tooBig(n, path) {
			return true
		}
		k := l.deref(n.Content[i])
		if k.Kind != yaml.ScalarNode {
			l.errorf(k, path, "a key in %s must be a string, not %s", what, describe(k))
			continue
		}
		kp := childPath(path, k.Value)
		if line, dup := seen[k.Value]; dup {
			l.errorf(k, kp, "%q is already set at line %d; keep one of them", k.Value, line)
			continue
		}
		seen[k.Value] = k.Line
		if known != nil && !slices.Contains(known, k.Value) {
			l.errorf(k, kp, "unknown key %q in %s%s; known keys are %s", k.Value, what, suggest(k.Value, known), strings.Join(known, ", "))
			continue
		}
		each(k.Value, k, l.deref(n.Content[i+1]), kp)
	}
	return true
}

func (l *loader) sequence(n *yaml.Node, path, what string, each func(n *yaml.Node, path string)) {
	n = l.deref(n)
	if n.Kind == yaml.ScalarNode && n.Tag == "!!null" {
		return
	}
	if n.Kind != yaml.SequenceNode {
		l.errorf(n, path, "%s must be a list, not %s", what, describe(n))
		return
	}
	for i, e := range n.Content {
		if l.tooBig(n, path) {
			return
		}
		each(l.deref(e), fmt.Sprintf("%s[%d]", path, i))
	}
}

func (l *loader) scalar(n *yaml.Node, path, what string) (str, bool) {
	n = l.deref(n)
	if n.Kind != yaml.ScalarNode || n.Tag == "!!null" {
		l.errorf(n, path, "%s must be a string, not %s", what, describe(n))
		return str{}, false
	}
	return str{v: n.Value, n: n, path: path}, true
}

func (l *loader) scalarPtr(n *yaml.Node, path, what string) *str {
	s, ok := l.scalar(n, path, what)
	if !ok {
		return nil
	}
	return &s
}

// list reads a sequence of strings; a null value is an empty list.
func (l *loader) list(n *yaml.Node, path, what string) []str {
	var out []str
	l.sequence(n, path, what, func(e *yaml.Node, path string) {
		if s, ok := l.scalar(e, path, "an entry of "+what); ok {
			out = append(out, s)
		}
	})
	return out
}

// scalarOrList reads one string or a list of them.
func (l *loader) scalarOrList(n *yaml.Node, path, what string) []str {
	if n = l.deref(n); n.Kind == yaml.ScalarNode && n.Tag != "!!null" {
		return []str{{v: n.Value, n: n, path: path}}
	}
	return l.list(n, path, what)
}

func describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		if n.Tag == "!!null" {
			return "empty"
		}
		return fmt.Sprintf("%q", n.Value)
	}
	return "this"
}

var plainKey = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_-]*$`)

func childPath(path, key string) string {
	if !plainKey.MatchString(key) {
		return path + "[" + strconv.QuoteToASCII(key) + "]"
	}
	if path == "" {
		return key
	}
	return path + "." + key
}

// suggest names the known key closest to a misspelt one.
func suggest(key string, known []string) string {
	best, bestD := "", 3
	for _, k := range known {
		if d := spelling.Distance(key, k); d < bestD {
			best, bestD = k, d
		}
	}
	if best == "" {
		return ""
	}
	return fmt.Sprintf(" (did you mean %q?)", best)
}
