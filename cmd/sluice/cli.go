package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"runtime/debug"
	"strings"
	"time"
)

// The command line's one convention, for every verb (as `go` does it):
// -h and --help print the verb's usage and flags on stdout and exit 0;
// an error prints `sluice: <what went wrong>` on stderr and exits 1.
// Verbs parse flags with newFlagSet and parseFlags and return errors;
// only run turns them into output and an exit code.

// command is one verb of the sluice command.
type command struct {
	name string
	// usage is the verb's synopsis lines, each starting "sluice name".
	usage string
	run   func(ctx context.Context, args []string, stdout, stderr io.Writer) error
}

func commands() []command {
	return []command{
		{"serve", `sluice serve [--config sluice.yaml] [--listen addr] [--check] [--log-level info] [--log-format text|json]
  Run the gateway. --check runs every check of the config and exits without binding anything.`,
			func(ctx context.Context, a []string, o, _ io.Writer) error { return runServe(ctx, a, o) }},
		{"wrap", `sluice wrap [--name NAME] [--config sluice.yaml] -- command [args...]
sluice wrap [--name NAME] [--config sluice.yaml] --url http://host/mcp
  Govern one MCP server as a stdio MCP server, for desktop clients. NAME (default: from the
  command, such as server-filesystem) names it in the inventory, events, approvals and the
  policy's upstream.`,
			func(ctx context.Context, a []string, _, _ io.Writer) error { return runWrap(ctx, a) }},
		{"demo", `sluice demo [--listen addr]
  Run the example MCP server behind the gateway with a demo policy.`,
			func(ctx context.Context, a []string, _, _ io.Writer) error { return runDemo(ctx, a) }},
		{"config", `sluice config validate FILE
  Run every check serve runs on the whole config, without binding anything.`,
			func(ctx context.Context, a []string, o, _ io.Writer) error { return runConfig(ctx, a, o) }},
		{"approvals", `sluice approvals list [--config sluice.yaml | --admin URL --token T]
sluice approvals approve|decline ID [--by NAME] [--config sluice.yaml | --admin URL --token T]
  Answer held calls (require_approval) through a running gateway's admin API.`,
			func(ctx context.Context, a []string, o, _ io.Writer) error { return runApprovals(ctx, a, o) }},
		{"policy", `sluice policy validate FILE
sluice policy test DIR|FILE
sluice policy explain --policy FILE --tool NAME [--upstream U] [--args JSON] [--history t1,t2] [--agent A]
  Check, test and explain a policy.`,
			func(ctx context.Context, a []string, o, _ io.Writer) error { return runPolicy(ctx, a, o) }},
		{"inventory", `sluice inventory list | diff UPSTREAM | pin UPSTREAM | approve UPSTREAM [TOOL] [--config sluice.yaml | --admin URL --token T]
  Review pinned tool inventories through a running gateway's admin API.`,
			func(ctx context.Context, a []string, o, _ io.Writer) error { return runInventory(ctx, a, o) }},
		{"keys", `sluice keys create --agent NAME [--expires 720h] [--config sluice.yaml | --file PATH]
sluice keys list [--json] [--config sluice.yaml | --file PATH]
sluice keys revoke ID [--config sluice.yaml | --file PATH]
  Manage agents' API keys. Keys live in auth.api_keys.file (default <data_dir>/agent_keys.json)
  as SHA-256 hashes; a new key is printed once. A running gateway sees a new or revoked key
  within a second.`,
			func(ctx context.Context, a []string, o, _ io.Writer) error { return runKeys(ctx, a, o) }},
		{"events", `sluice events query|tail|export [--config sluice.yaml | --db PATH] [--agent A] [--tool T] [--decision D] [--since T] [--json]
  Read the audit events.`,
			func(ctx context.Context, a []string, o, _ io.Writer) error { return runEvents(ctx, a, o) }},
		{"recommend", `sluice recommend [run|list] [--since 30d] [--config sluice.yaml] [--json]
sluice recommend show|approve|decline ID [--by NAME] [--reason CODE] [--config sluice.yaml]
  Propose policy changes from the audit events (RFC-010 §10): run stores what the engine finds
  and prints the pending ones; approve rewrites policy_file (kept signed under
  data_dir/policy-history; the gateway reloads it); decline needs --reason (NOT_NEEDED,
  SECURITY_CONCERN, INCORRECT_EVIDENCE, DEFERRED) and keeps the finding away for 30 days.`,
			func(ctx context.Context, a []string, o, _ io.Writer) error { return runRecommend(ctx, a, o) }},
		{"replay", `sluice replay --events DB|JSONL --policy FILE [--json]
  Re-decide recorded calls under another policy and report what would change.`,
			func(ctx context.Context, a []string, o, e io.Writer) error { return runReplay(ctx, a, o, e) }},
		{"classify", `sluice classify [--config sluice.yaml] [--text [--result]] [FILE]
  Classify calls, one JSON object per line (tool, description, input_schema, annotations,
  arguments, upstream, target) on standard input or FILE, with the built-in classifier and
  --config's trust zones: one verdict per line (axes, confidences, composite, route, risk
  level, injection findings). --text runs the injection detector on raw lines of text
  (--result: as tool results, what the model reads).`,
			func(ctx context.Context, a []string, o, _ io.Writer) error { return runClassify(ctx, a, os.Stdin, o) }},
		{"health", `sluice health [--url http://127.0.0.1:8080/healthz] [--ca ca.pem] [--server-name NAME]
  Exit 0 if the gateway answers its health check (the image's HEALTHCHECK; distroless has no curl).
  --ca checks a TLS gateway's certificate against that CA (or self-signed certificate), for
  --server-name when the certificate names the gateway's host rather than --url's.`,
			func(ctx context.Context, a []string, o, _ io.Writer) error { return runHealth(ctx, a, o) }},
		{"bench", `sluice bench [flags]
  Measure tools/call round trips direct, through a bare proxy and through Sluice.`,
			func(ctx context.Context, a []string, o, e io.Writer) error { return benchTo(ctx, a, o, e) }},
	}
}

// mainUsage is `sluice --help`.
func mainUsage() string {
	var b strings.Builder
	b.WriteString("usage:\n")
	for _, c := range commands() {
		for _, l := range strings.Split(c.usage, "\n") {
			if strings.HasPrefix(l, "sluice ") {
				b.WriteString("  " + l + "\n")
			}
		}
	}
	b.WriteString("  sluice --version\n\nRun `sluice VERB --help` for a verb's flags.\n")
	return b.String()
}

// run is the sluice command: it returns the process's exit code.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, "sluice: name a command\n"+mainUsage())
		return 1
	}
	switch args[0] {
	case "-h", "--help", "-help":
		fmt.Fprint(stdout, mainUsage())
		return 0
	case "--version", "-version", "version":
		fmt.Fprintln(stdout, "sluice", version())
		return 0
	case "help":
		if len(args) == 1 {
			fmt.Fprint(stdout, mainUsage())
			return 0
		}
		args = []string{args[1], "--help"}
	}
	var cmd *command
	for _, c := range commands() {
		if c.name == args[0] {
			cmd = &c
			break
		}
	}
	if cmd == nil {
		fmt.Fprintf(stderr, "sluice: unknown command %q; run `sluice --help` for the list\n", args[0])
		return 1
	}
	err := cmd.run(ctx, args[1:], stdout, stderr)
	var help *helpError
	var usage *usageError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &help):
		fmt.Fprintf(stdout, "usage:\n%s\n", indent(cmd.usage))
		if help.fs != nil {
			printFlags(stdout, help.fs)
		}
		return 0
	case errors.Is(err, errFailed): // the verb printed why
		return 1
	case errors.As(err, &usage):
		fmt.Fprintf(stderr, "sluice: %v\nrun `sluice %s --help` for usage\n", err, cmd.name)
		return 1
	default:
		fmt.Fprintf(stderr, "sluice: %s\n", strings.TrimPrefix(err.Error(), "sluice: "))
		return 1
	}
}

func indent(s string) string {
	return "  " + strings.ReplaceAll(s, "\n", "\n  ")
}

// helpError is a verb's answer to -h or --help: run prints the verb's
// usage and the flags of fs (nil: none), and exits 0.
type helpError struct{ fs *flag.FlagSet }

func (*helpError) Error() string { return "help requested" }

// errHelp is a helpError without flags.
var errHelp error = &helpError{}

// usageError is a command line that does not say what to do: run adds a
// pointer to the verb's --help.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usageErrorf(format string, args ...any) error {
	return &usageError{fmt.Sprintf(format, args...)}
}

// isHelp reports whether arg asks for help.
func isHelp(arg string) bool {
	return arg == "-h" || arg == "--help" || arg == "-help" || arg == "help"
}

// newFlagSet returns a flag set that reports errors to its caller and
// prints nothing itself.
func newFlagSet(name string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	return fs
}

// parseFlags parses args into fs: -h or --help is a helpError, a bad flag
// a usageError.
func parseFlags(fs *flag.FlagSet, args []string) error {
	err := fs.Parse(args)
	switch {
	case errors.Is(err, flag.ErrHelp):
		return &helpError{fs}
	case err != nil:
		return usageErrorf("%s: %v", fs.Name(), err)
	}
	return nil
}

// printFlags lists fs's flags, --name style; flags with no usage text
// (internal ones) are left out.
func printFlags(w io.Writer, fs *flag.FlagSet) {
	first := true
	fs.VisitAll(func(f *flag.Flag) {
		if f.Usage == "" {
			return
		}
		if first {
			fmt.Fprintln(w, "\nflags:")
			first = false
		}
		name, usage := flag.UnquoteUsage(f)
		line := "  --" + f.Name
		if name != "" {
			line += " " + name
		}
		if f.DefValue != "" && f.DefValue != "false" && f.DefValue != "0" && f.DefValue != "0s" {
			usage += fmt.Sprintf(" (default %s)", f.DefValue)
		}
		fmt.Fprintf(w, "%s\n    \t%s\n", line, usage)
	})
}

// buildVersion and buildRevision, set with -ldflags -X where the VCS
// stamp is missing (the Docker build has no .git), override what the Go
// toolchain recorded.
var buildVersion, buildRevision string

// version is the module version and VCS revision the binary was built
// from, as the Go toolchain recorded them.
func version() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "(unknown version)"
	}
	v := bi.Main.Version
	if v == "" {
		v = "(devel)"
	}
	if buildVersion != "" {
		v = buildVersion
	}
	var rev, modified, at string
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			if s.Value == "true" {
				modified = "+dirty"
			}
		case "vcs.time":
			at = s.Value
		}
	}
	if buildRevision != "" {
		rev, modified = buildRevision, ""
	}
	if rev != "" {
		v += " " + rev + modified
	}
	if at != "" {
		v += " " + at
	}
	return v + " " + bi.GoVersion
}

// runHealth is `sluice health`: GET the URL, exit 0 on 200.
func runHealth(ctx context.Context, args []string, out io.Writer) error {
	fs := newFlagSet("health")
	u := fs.String("url", "http://127.0.0.1:8080/healthz", "the gateway's /healthz (or /readyz) URL")
	timeout := fs.Duration("timeout", 3*time.Second, "how long to wait for the answer")
	caFile := fs.String("ca", "", "PEM file of the CA (or the self-signed certificate) the gateway's TLS certificate is checked against, instead of the system's")
	serverName := fs.String("server-name", "", "the name the gateway's TLS certificate is checked for, when --url names another (https://127.0.0.1:8080/healthz of a certificate for gw.example.com)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 { // `sluice health URL` checked the default URL, maybe another gateway
		return usageErrorf("health: unexpected argument %q (give the URL as --url)", fs.Arg(0))
	}
	client := http.DefaultClient
	if *caFile != "" || *serverName != "" {
		// The image's HEALTHCHECK reaches the gateway at 127.0.0.1, which
		// its certificate rarely names: --server-name gives the name it
		// is checked for (TestHealthTLSServerName).
		conf := &tls.Config{ServerName: *serverName}
		if *caFile != "" {
			pemBytes, err := os.ReadFile(*caFile)
			if err != nil {
				return fmt.Errorf("health: --ca: %w", err)
			}
			conf.RootCAs = x509.NewCertPool()
			if !conf.RootCAs.AppendCertsFromPEM(pemBytes) {
				return fmt.Errorf("health: --ca: no PEM certificate in %s", *caFile)
			}
		}
		client = &http.Client{Transport: &http.Transport{TLSClientConfig: conf}}
	}
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, *u, nil)
	if err != nil {
		return usageErrorf("health: --url: %v", err)
	}
	resp, err := client.Do(req)
	if err != nil {
		if he := (x509.HostnameError{}); errors.As(err, &he) && he.Certificate != nil && len(he.Certificate.DNSNames) > 0 {
			return fmt.Errorf("health: %w (the certificate names %s: give the one to check as --server-name)", err, strings.Join(he.Certificate.DNSNames, ", "))
		}
		return fmt.Errorf("health: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("health: %s answered %s", *u, resp.Status)
	}
	fmt.Fprintln(out, "ok")
	return nil
}

// flagSet reports whether the command line set the flag name.
func flagSet(fs *flag.FlagSet, name string) (set bool) {
	fs.Visit(func(f *flag.Flag) {
		if f.Name == name {
			set = true
		}
	})
	return set
}

// noDefaultFile is the error of a command whose --NAME was not given and
// whose default file is not in the working directory: the bare "open
// sluice.yaml: no such file or directory" did not say that a default was
// looked for, nor how to name the file. It is nil when the flag was set
// or the file exists.
func noDefaultFile(fs *flag.FlagSet, name, path, what string) error {
	if flagSet(fs, name) {
		return nil
	}
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		return nil
	}
	return fmt.Errorf("%s: no --%s given and there is no %s here: pass --%s FILE with %s", fs.Name(), name, path, name, what)
}
