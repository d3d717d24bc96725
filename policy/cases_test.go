package policy

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/intercept"
)

// TestCases runs the policy test cases under testdata/cases: each file holds
// a policy under `policy:` and its cases under `cases:`, like OPA's
// test/cases.
func TestCases(t *testing.T) {
	files, err := filepath.Glob("testdata/cases/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no case files: %v", err)
	}
	for _, f := range files {
		t.Run(strings.TrimSuffix(filepath.Base(f), ".yaml"), func(t *testing.T) {
			src, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			p, err := Compile(src, f, Options{})
			if err != nil {
				t.Fatalf("Compile: %v", err)
			}
			results, err := RunCases(p, src)
			if err != nil {
				t.Fatalf("RunCases: %v", err)
			}
			for _, r := range results {
				for i, c := range r.Calls {
					checkValid(t, c.Got)
					for _, fail := range c.Failures {
						t.Errorf("%s:%d: %s: call %d (%s): %s", f, c.Line, r.Note, i, c.Tool, fail)
					}
				}
			}
		})
	}
}

// checkValid asserts what every decision of a Policy must carry (RFC-0002
// and ADR-027), and that the fail-closed wrapper would pass it unchanged.
func checkValid(t *testing.T, d intercept.Decision) {
	t.Helper()
	switch {
	case d.Verdict != intercept.Allow && d.Verdict != intercept.Deny && d.Verdict != intercept.RequireApproval:
		t.Errorf("verdict %q is not valid", d.Verdict)
	case d.Reason == "" || d.PublicReason == "" || d.Evidence.ReasonCode == "":
		t.Errorf("got reason %q, public_reason %q, reason_code %q; want all set", d.Reason, d.PublicReason, d.Evidence.ReasonCode)
	case d.Mode != intercept.ModeThrow && d.Mode != intercept.ModeToolResult:
		t.Errorf("got result_mode %q, want throw or tool_result", d.Mode)
	case d.Reason != intercept.ReasonPolicyNotConfigured && len(d.PolicyVersion) != 64:
		t.Errorf("got policy_version %q, want a sha256 hex", d.PolicyVersion)
	}
}

func TestRunCasesReportsFailures(t *testing.T) {
	p := mustCompile(t, "allow: [echo]")
	res, err := RunCases(p, []byte(`
cases:
  - note: wrong on purpose
    calls:
      - {tool: echo, want: {decision: deny, reason: rule_deny, rule: x}}
`))
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != 1 || res[0].Passed() {
		t.Fatalf("got %+v, want one failing case", res)
	}
	got := strings.Join(res[0].Calls[0].Failures, "; ")
	want := `decision: got allow, want deny; reason: got rule_allow, want rule_deny; rule: got "allow:echo", want "x"`
	if got != want || res[0].Calls[0].Line != 5 {
		t.Errorf("got %q at line %d, want %q at line 5", got, res[0].Calls[0].Line, want)
	}
}

func TestRunCasesRejectsBadFiles(t *testing.T) {
	p := mustCompile(t, "allow: [echo]")
	for _, src := range []string{
		"cases: [{calls: [{tool: echo, wnat: {decision: allow}}]}]",
		"cases: [{calls: [{tool: echo}]}]",
		"cases: [{calls: [{tool: echo, advance: soon, want: {decision: allow}}]}]",
		"cases: [{calls: [{tool: echo, args: {a: 1}, args_json: '{}', want: {decision: allow}}]}]",
		"nothing: here",
	} {
		if _, err := RunCases(p, []byte(src)); err == nil {
			t.Errorf("RunCases(%q): got no error, want one", src)
		}
	}
}

func mustCompile(t testing.TB, src string) *Policy {
	t.Helper()
	p, err := Compile([]byte(src), "test.yaml", Options{})
	if err != nil {
		t.Fatalf("Compile: %v", err)
	}
	return p
}

// TestLoadErrors compiles every file under testdata/invalid and checks that
// the error names the file, line, column, YAML path and fix given by the
// file's `# error:` lines.
func TestLoadErrors(t *testing.T) {
	files, _ := filepath.Glob("testdata/invalid/*.yaml")
	if len(files) == 0 {
		t.Fatal("no files")
	}
	for _, f := range files {
		t.Run(strings.TrimSuffix(filepath.Base(f), ".yaml"), func(t *testing.T) {
			src, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			var wants []string
			for _, line := range strings.Split(string(src), "\n") {
				if w, ok := strings.CutPrefix(line, "# error: "); ok {
					wants = append(wants, w)
				}
			}
			if len(wants) == 0 {
				t.Fatal("the file has no `# error:` line")
			}
			_, err = Compile(src, filepath.Base(f), Options{})
			if err == nil {
				t.Fatalf("got no error, want %q", wants)
			}
			if !errors.Is(err, ErrInvalid) {
				t.Errorf("got %v, want an error matching ErrInvalid", err)
			}
			for _, w := range wants {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("got error\n%v\nwant it to contain\n%s", err, w)
				}
			}
		})
	}
}
