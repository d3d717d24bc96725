package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/sluicehq/sluice/classifier"
	"github.com/sluicehq/sluice/intercept"
)

// classifyInput is one line of `sluice classify`'s input.
type classifyInput struct {
	Tool        string         `json:"tool"`
	Description string         `json:"description"`
	InputSchema jsontext.Value `json:"input_schema"`
	Annotations jsontext.Value `json:"annotations"`
	Arguments   jsontext.Value `json:"arguments"`
	Upstream    string         `json:"upstream"`
	// Target is where the upstream is: "stdio:<command line>" or its URL.
	Target string `json:"target"`
}

type classifyAxis struct {
	Value      string  `json:"value"`
	Confidence float64 `json:"confidence"`
	Source     string  `json:"source"`
	Default    bool    `json:"conservative_default,omitempty"`
}

type classifyOutput struct {
	Line        int                           `json:"line"`
	Tool        string                        `json:"tool,omitempty"`
	Axes        map[string]classifyAxis       `json:"axes,omitempty"`
	Composite   float64                       `json:"composite_confidence,omitzero"`
	Route       string                        `json:"route,omitempty"`
	RiskLevel   classifier.RiskLevel          `json:"risk_level,omitempty"`
	RiskFactors []string                      `json:"risk_factors,omitempty"`
	Injection   []classifier.InjectionFinding `json:"injection_findings,omitempty"`
	Error       string                        `json:"error,omitempty"`
}

// runClassify is `sluice classify`: the built-in classifier (with the
// trust zones and declared tools of --config) on JSON Lines of calls, or
// with --text the injection detector on lines of text.
func runClassify(_ context.Context, args []string, in io.Reader, out io.Writer) error {
	fs := newFlagSet("classify")
	cfgPath := fs.String("config", "", "take the classifier's options (trust zones, upstreams, declared tools) from this sluice.yaml")
	text := fs.Bool("text", false, "each input line is raw text: run the injection detector on it")
	asResult := fs.Bool("result", false, "with --text: scan each line as a tool result (what the model reads), with the rules for results")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *asResult && !*text {
		return usageErrorf("classify: --result scans lines of text as tool results: give --text with it")
	}
	if fs.NArg() > 1 {
		return usageErrorf("classify: one FILE at most, got %q too", fs.Arg(1))
	}
	opts := classifier.Options{}
	if *cfgPath != "" {
		cfg, err := loadConfig(*cfgPath)
		if err != nil {
			return err
		}
		opts = cfg.classifierOptions()
	}
	b, err := classifier.NewBuiltin(opts)
	if err != nil {
		return fmt.Errorf("classify: %w", err)
	}
	if fs.NArg() > 0 {
		f, err := os.Open(fs.Arg(0))
		if err != nil {
			return fmt.Errorf("classify: %w", err)
		}
		defer f.Close()
		in = f
	}
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
	w := bufio.NewWriter(out)
	defer w.Flush()
	enc := jsontext.NewEncoder(w)
	n := 0
	for sc.Scan() {
		n++
		line := sc.Bytes()
		if len(strings.TrimSpace(string(line))) == 0 {
			continue
		}
		var res classifyOutput
		if *text {
			src := classifier.InArguments
			if *asResult {
				src = classifier.InResult
			}
			res = classifyOutput{Line: n, Injection: classifier.DetectInjectionTextFrom(string(line), src)}
		} else {
			res = classifyLine(b, n, line)
		}
		if err := json.MarshalEncode(enc, res, json.Deterministic(true)); err != nil {
			return err
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("classify: line %d: %w", n+1, err)
	}
	return nil
}

func classifyLine(b *classifier.Builtin, n int, line []byte) classifyOutput {
	var c classifyInput
	if err := json.Unmarshal(line, &c); err != nil {
		return classifyOutput{Line: n, Error: "not a JSON object with tool, description, input_schema, annotations, arguments, upstream, target: " + err.Error()}
	}
	if c.Tool == "" {
		return classifyOutput{Line: n, Error: "tool is missing"}
	}
	if len(c.Arguments) == 0 {
		c.Arguments = jsontext.Value("{}")
	}
	d := &intercept.ActionDescriptor{
		TxnID: fmt.Sprintf("line-%d", n), Method: "tools/call", ToolName: c.Tool, ToolDescription: c.Description,
		Parameters: c.Arguments, TargetEndpoint: c.Target, Upstream: c.Upstream, Annotations: c.Annotations,
		InputSchema: c.InputSchema, SessionID: "classify",
	}
	v, err := b.Classify(context.Background(), d)
	if err != nil {
		return classifyOutput{Line: n, Tool: c.Tool, Error: err.Error()}
	}
	rec := classifier.NewIntentRecord(d, v, classifier.IntentOptions{})
	out := classifyOutput{
		Line: n, Tool: c.Tool, Axes: map[string]classifyAxis{}, Composite: v.CompositeConfidence,
		Route: b.Options().Thresholds.Route(v.CompositeConfidence).String(), RiskLevel: rec.RiskLevel,
		RiskFactors: rec.RiskFactors, Injection: rec.Injection,
	}
	for name, a := range v.Axes.All() {
		out.Axes[name] = classifyAxis{Value: a.Classified, Confidence: a.Confidence, Source: a.Source, Default: a.ConservativeDefaultApplied}
	}
	return out
}
