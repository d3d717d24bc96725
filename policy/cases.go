package policy

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/go-json-experiment/json/jsontext"
	"go.yaml.in/yaml/v3"

	"github.com/sluicehq/sluice/intercept"
)

// Policy test cases, as `sluice policy test` runs them:
//
//	cases:
//	  - note: a sensitive read, then a network sink, is denied
//	    calls:
//	      - {tool: read_document, agent: a, session: s1, want: {decision: allow}}
//	      - tool: web_search
//	        agent: a
//	        session: s1
//	        args: {q: secrets}        # or args_json: '{"q":"\u0073ecrets"}'
//	        advance: 1h               # move the case's clock first
//	        boundary: external        # the descriptor's boundary_declared
//	        method: tools/call        # the descriptor's method; empty: from the name
//	        want: {decision: deny, reason: route_rule_deny, rule: no-exfil}
//
// The calls of a case run in order through intercept.Decide, and every
// allowed call is reported to Forwarded, so route memory builds up as it
// would in the gateway. Each case starts with empty route memory and a
// clock at 2026-01-01T00:00:00Z. A file may also hold the policy under a
// `policy` key, which RunCases ignores.

type casesFile struct {
	Policy yaml.Node  `yaml:"policy"`
	Cases  []testCase `yaml:"cases"`
}

type testCase struct {
	Note  string     `yaml:"note"`
	Calls []testCall `yaml:"calls"`
}

type testCall struct {
	Tool     string         `yaml:"tool"`
	Method   string         `yaml:"method"`
	Upstream string         `yaml:"upstream"`
	Args     map[string]any `yaml:"args"`
	ArgsJSON string         `yaml:"args_json"`
	Agent    string         `yaml:"agent"`
	Session  string         `yaml:"session"`
	Boundary string         `yaml:"boundary"`
	Advance  string         `yaml:"advance"`
	Want     testWant       `yaml:"want"`
}

type testWant struct {
	Decision  string   `yaml:"decision"`
	Reason    string   `yaml:"reason"`
	Rule      *string  `yaml:"rule"`
	RouteRule string   `yaml:"route_rule"`
	Classes   []string `yaml:"classes"`
}

// CaseResult is the outcome of one case.
type CaseResult struct {
	Note  string
	Line  int
	Calls []CallResult
}

// Passed reports whether every call of the case got what it wanted.
func (r CaseResult) Passed() bool {
	for _, c := range r.Calls {
		if len(c.Failures) > 0 {
			return false
		}
	}
	return true
}

// CallResult is the outcome of one call of a case.
type CallResult struct {
	Line     int
	Tool     string
	Got      intercept.Decision
	Failures []string // "decision: got allow, want deny"; empty if it passed
}

// caseEpoch is where every case's clock starts.
var caseEpoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// RunCases runs the test cases in src against p. It returns an error only
// when src cannot be read as cases; failing cases are in the results.
func RunCases(p *Policy, src []byte) ([]CaseResult, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(src, &doc); err != nil {
		return nil, fmt.Errorf("cases: %w", err)
	}
	var cf casesFile
	dec := yaml.NewDecoder(bytes.NewReader(src))
	dec.KnownFields(true)
	if err := dec.Decode(&cf); err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("cases: %w", err)
	}
	if len(cf.Cases) == 0 {
		return nil, errors.New("cases: no cases; write `cases: [{note: ..., calls: [...]}]`")
	}
	caseNodes := childSeq(&doc, "cases")
	var out []CaseResult
	for i, tc := range cf.Cases {
		res := CaseResult{Note: tc.Note}
		var callNodes []*yaml.Node
		if i < len(caseNodes) {
			res.Line = caseNodes[i].Line
			callNodes = childSeq(caseNodes[i], "calls")
		}
		now := caseEpoch
		q := p.with(NewMemoryStore(MemoryOptions{}), func() time.Time { return now })
		for j, c := range tc.Calls {
			cr := CallResult{Tool: c.Tool}
			if j < len(callNodes) {
				cr.Line = callNodes[j].Line
			}
			d, err := c.descriptor()
			if err == nil && c.Advance != "" {
				var adv time.Duration
				if adv, err = parseWindow(c.Advance); err == nil {
					now = now.Add(adv)
				}
			}
			if err != nil {
				return nil, fmt.Errorf("cases[%d].calls[%d] (line %d): %w", i, j, cr.Line, err)
			}
			if c.Want.Decision == "" {
				return nil, fmt.Errorf("cases[%d].calls[%d] (line %d): want.decision is missing; say allow, deny or require_approval", i, j, cr.Line)
			}
			ctx := context.Background()
			cr.Got = intercept.Decide(ctx, q, d)
			if cr.Got.Verdict == intercept.Allow {
				q.Forwarded(ctx, d, cr.Got)
			}
			cr.Failures = c.Want.check(cr.Got)
			res.Calls = append(res.Calls, cr)
		}
		out = append(out, res)
	}
	return out, nil
}

// with returns a copy of p with its own route memory and clock.
func (p *Policy) with(s Store, now func() time.Time) *Policy {
	q := *p
	q.store, q.now = s, now
	return &q
}

func (c *testCall) descriptor() (*intercept.ActionDescriptor, error) {
	d := &intercept.ActionDescriptor{
		TxnID:            intercept.NewTxnID(),
		Method:           c.Method,
		ToolName:         c.Tool,
		Upstream:         c.Upstream,
		Agent:            c.Agent,
		SessionID:        c.Session,
		BoundaryDeclared: c.Boundary,
		Parameters:       jsontext.Value("{}"),
	}
	switch {
	case c.Args != nil && c.ArgsJSON != "":
		return nil, errors.New("give args or args_json, not both")
	case c.Args != nil:
		b, err := json.Marshal(c.Args)
		if err != nil {
			return nil, fmt.Errorf("args: %w", err)
		}
		d.Parameters = b
	case c.ArgsJSON != "":
		d.Parameters = jsontext.Value(c.ArgsJSON)
	}
	return d, nil
}

func (w testWant) check(got intercept.Decision) []string {
	var f []string
	if string(got.Verdict) != w.Decision {
		f = append(f, fmt.Sprintf("decision: got %s, want %s", got.Verdict, w.Decision))
	}
	if w.Reason != "" && got.Reason != w.Reason {
		f = append(f, fmt.Sprintf("reason: got %s, want %s", got.Reason, w.Reason))
	}
	if w.Rule != nil && got.RuleID != *w.Rule {
		f = append(f, fmt.Sprintf("rule: got %q, want %q", got.RuleID, *w.Rule))
	}
	if w.RouteRule != "" && got.Evidence.MatchedRouteRuleID != w.RouteRule {
		f = append(f, fmt.Sprintf("route_rule: got %q, want %q", got.Evidence.MatchedRouteRuleID, w.RouteRule))
	}
	if w.Classes != nil && !slices.Equal(got.Evidence.MatchedToolClasses, w.Classes) {
		f = append(f, fmt.Sprintf("classes: got %v, want %v", got.Evidence.MatchedToolClasses, w.Classes))
	}
	return f
}

// childSeq returns the items of the sequence under key in the mapping n
// (or the document holding it), for line numbers.
func childSeq(n *yaml.Node, key string) []*yaml.Node {
	if n.Kind == yaml.DocumentNode && len(n.Content) == 1 {
		n = n.Content[0]
	}
	if n.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key && n.Content[i+1].Kind == yaml.SequenceNode {
			return n.Content[i+1].Content
		}
	}
	return nil
}
