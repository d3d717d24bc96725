package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/go-json-experiment/json/jsontext"
	"go.yaml.in/yaml/v3"

	"github.com/sluicehq/sluice/intercept"
	"github.com/sluicehq/sluice/policy"
)

// runPolicy is `sluice policy validate|test|explain`, the policy author's
// tools. It returns errFailed (exit 1) when validation or a test fails.
func runPolicy(ctx context.Context, args []string, out io.Writer) error {
	if len(args) == 0 {
		return usageErrorf("policy: want validate FILE, test DIR or explain --policy FILE --tool NAME")
	}
	switch args[0] {
	case "-h", "--help", "-help", "help":
		return errHelp
	case "validate":
		return policyValidate(args[1:], out)
	case "test":
		return policyTest(args[1:], out)
	case "explain":
		return policyExplain(ctx, args[1:], out)
	}
	return usageErrorf("policy: unknown verb %q (want validate, test or explain)", args[0])
}

var errFailed = errors.New("failed")

func policyValidate(args []string, out io.Writer) error {
	fs := newFlagSet("policy validate")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	args = fs.Args()
	if len(args) != 1 {
		return usageErrorf("policy validate: want one FILE (a policy file, or sluice.yaml with a policy: section)")
	}
	src, err := os.ReadFile(args[0])
	if err != nil {
		return err
	}
	// A gateway config: validate the policy it names, or say where it is.
	var top map[string]any
	if yaml.Unmarshal(src, &top) == nil && top["policy"] == nil {
		if _, ok := top["policy_file"]; ok {
			cfg, err := loadConfig(args[0])
			if err != nil {
				return err
			}
			return policyValidate([]string{cfg.PolicyFile}, out)
		}
		if _, ok := top["upstreams"]; ok {
			return fmt.Errorf("policy validate: %s is a gateway config with no policy: section or policy_file (every call would be denied); "+
				"add one, or check the whole config with `sluice config validate %[1]s`", args[0])
		}
	}
	p, err := policy.Compile(src, args[0], policy.Options{})
	if err != nil {
		fmt.Fprintln(out, err)
		return errFailed
	}
	ws := p.Validate()
	for _, w := range ws {
		fmt.Fprintln(out, "warning:", w)
	}
	fmt.Fprintf(out, "%s: ok (%s), policy version %s\n", args[0], count(len(ws), "warning"), p.Version())
	return nil
}

// policyTest runs every *.yaml file in a directory (or one file): each
// holds a policy and its cases, like OPA's test cases.
func policyTest(args []string, out io.Writer) error {
	fs := newFlagSet("policy test")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	args = fs.Args()
	if len(args) != 1 {
		return usageErrorf("policy test: want one DIR (or FILE) of YAML case files")
	}
	files := []string{args[0]}
	if st, err := os.Stat(args[0]); err != nil {
		return err
	} else if st.IsDir() {
		files, _ = filepath.Glob(filepath.Join(args[0], "*.yaml"))
		more, _ := filepath.Glob(filepath.Join(args[0], "*.yml"))
		files = append(files, more...)
		sort.Strings(files)
	}
	if len(files) == 0 {
		return fmt.Errorf("policy test: no .yaml files in %s", args[0])
	}
	passed, failed := 0, 0
	for _, f := range files {
		src, err := os.ReadFile(f)
		if err != nil {
			return err
		}
		p, err := policy.Compile(src, f, policy.Options{})
		if err != nil {
			fmt.Fprintln(out, err)
			failed++
			continue
		}
		res, err := policy.RunCases(p, src)
		if err != nil {
			fmt.Fprintf(out, "%s: %v\n", f, err)
			failed++
			continue
		}
		for _, c := range res {
			if c.Passed() {
				passed++
				continue
			}
			failed++
			fmt.Fprintf(out, "FAIL %s:%d: %s\n", f, c.Line, c.Note)
			for _, call := range c.Calls {
				for _, why := range call.Failures {
					fmt.Fprintf(out, "    %s:%d: %s: %s\n", f, call.Line, call.Tool, why)
				}
			}
		}
	}
	fmt.Fprintf(out, "%d passed, %d failed\n", passed, failed)
	if failed > 0 {
		return errFailed
	}
	return nil
}

func policyExplain(ctx context.Context, args []string, out io.Writer) error {
	fs := newFlagSet("policy explain")
	file := fs.String("policy", "sluice.yaml", "policy file, or sluice.yaml with a policy: section")
	tool := fs.String("tool", "", "tool name")
	upstream := fs.String("upstream", "", "upstream name")
	argsJSON := fs.String("args", "{}", "tool arguments as JSON")
	history := fs.String("history", "", "comma-separated tools called (and forwarded) before, oldest first; upstream/tool form allowed")
	agent := fs.String("agent", "cli", "agent identity")
	session := fs.String("session", "explain", "session id")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *tool == "" {
		return usageErrorf("policy explain: --tool is required")
	}
	if !jsontext.Value(*argsJSON).IsValid() {
		return fmt.Errorf("policy explain: --args is not valid JSON: %s", *argsJSON)
	}
	if err := noDefaultFile(fs, "policy", *file, "the policy (a policy file, or a sluice.yaml with a policy: section)"); err != nil {
		return err
	}
	src, err := os.ReadFile(*file)
	if err != nil {
		return err
	}
	p, err := policy.Compile(src, *file, policy.Options{})
	if err != nil {
		return err
	}
	desc := func(name string, params string) *intercept.ActionDescriptor {
		up := *upstream
		if u, t, ok := strings.Cut(name, "/"); ok {
			up, name = u, t
		}
		return &intercept.ActionDescriptor{TxnID: intercept.NewTxnID(), ToolName: name, Upstream: up, Agent: *agent, SessionID: *session, Parameters: jsontext.Value(params)}
	}
	if *history != "" {
		for _, h := range strings.Split(*history, ",") {
			d := desc(strings.TrimSpace(h), "{}")
			if dec := intercept.Decide(ctx, p, d); dec.Verdict == intercept.Allow {
				p.Forwarded(ctx, d, dec)
			} else {
				fmt.Fprintf(out, "history: %s was not allowed (%s, %s); not remembered\n", h, dec.Verdict, dec.Reason)
			}
		}
	}
	dec, trace := p.Explain(ctx, desc(*tool, *argsJSON))
	for _, line := range trace {
		fmt.Fprintln(out, line)
	}
	b, _ := json.MarshalIndent(dec, "", "  ")
	fmt.Fprintln(out, string(b))
	return nil
}
