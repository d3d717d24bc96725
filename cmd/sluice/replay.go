package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/sluicehq/sluice/audit"
	"github.com/sluicehq/sluice/intercept"
	"github.com/sluicehq/sluice/policy"
	"github.com/sluicehq/sluice/telemetry"
)

// replayChange is one recorded call whose decision differs under the new
// policy.
type replayChange struct {
	Seq       int64     `json:"seq,omitempty"`
	Time      time.Time `json:"time"`
	TxnID     string    `json:"txn_id"`
	Agent     string    `json:"agent,omitempty"`
	Session   string    `json:"session,omitempty"`
	Upstream  string    `json:"upstream,omitempty"`
	Tool      string    `json:"tool"`
	Was       string    `json:"was"`
	WasReason string    `json:"was_reason"`
	Now       string    `json:"now"`
	NowReason string    `json:"now_reason"`
	Rule      string    `json:"rule,omitempty"`
	// NoArguments: the event kept only a hash of the arguments (set
	// audit.keep_arguments to keep them), so conditions on args saw {}.
	NoArguments bool `json:"no_arguments,omitempty"`
}

type replaySummary struct {
	Calls        int `json:"calls"`
	Changed      int `json:"changed"`
	NewlyDenied  int `json:"newly_denied"`
	NewlyAllowed int `json:"newly_allowed"`
	NewlyHeld    int `json:"newly_held"`
	NoArguments  int `json:"calls_without_arguments"`
	// Undetermined counts the calls recorded without arguments whose
	// decision under the new policy reads them (a rule that can match
	// the tool has a condition on args): they are not replayed as
	// changes, since {} in place of the arguments would decide them.
	Undetermined      int            `json:"undetermined"`
	UndeterminedCalls []replayChange `json:"undetermined_calls,omitempty"`
	PolicyVersion     string         `json:"policy_version"`
	Changes           []replayChange `json:"changes"`
}

// runReplay is `sluice replay --events DB|JSONL --policy FILE [--json]`:
// it re-evaluates recorded calls in order under another policy, rebuilding
// route memory from the calls the new policy allows, with the recorded
// times as the clock, and reports what would change.
func runReplay(ctx context.Context, args []string, out, progress io.Writer) error {
	fs := newFlagSet("replay")
	events := fs.String("events", "", "audit database (events.db) or JSONL export")
	policyFile := fs.String("policy", "", "policy file (or sluice.yaml with a policy: section) to evaluate the calls under")
	asJSON := fs.Bool("json", false, "print the result as JSON")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *events == "" || *policyFile == "" {
		return usageErrorf("replay: --events and --policy are required")
	}
	if fs.NArg() > 0 {
		return usageErrorf("replay: unexpected argument %q", fs.Arg(0))
	}
	src, err := os.ReadFile(*policyFile)
	if err != nil {
		return err
	}
	var now time.Time
	// Route memory as the gateway keeps it (config.decider): one per
	// principal, and one for every unauthenticated caller whatever name
	// it gave.
	p, err := policy.Compile(src, *policyFile, policy.Options{Now: func() time.Time { return now }, OneUnauthenticatedAgent: true})
	if err != nil {
		return err
	}
	var recorded []telemetry.Event
	collect := func(ev telemetry.Event) error {
		if ev.Type == telemetry.TypePolicyEnforced {
			recorded = append(recorded, ev)
		}
		return nil
	}
	if strings.HasSuffix(*events, ".jsonl") || strings.HasSuffix(*events, ".json") || *events == "-" {
		var r io.Reader = os.Stdin
		if *events != "-" {
			f, err := os.Open(*events)
			if err != nil {
				return err
			}
			defer f.Close()
			r = f
		}
		err = audit.ReadJSONL(r, collect)
	} else {
		st, oerr := audit.Open(*events, audit.Options{ReadOnly: true})
		if oerr != nil {
			return oerr
		}
		defer st.Close()
		err = st.Scan(ctx, audit.Filter{Type: telemetry.TypePolicyEnforced}, collect)
	}
	if err != nil {
		return fmt.Errorf("replay: reading events: %w", err)
	}

	sum := replaySummary{Calls: len(recorded), PolicyVersion: p.Version()}
	bar := newProgress(progress, len(recorded))
	for i, ev := range recorded {
		bar.step(i + 1)
		var pe telemetry.PolicyEnforcement
		if err := ev.Decode(&pe); err != nil {
			return fmt.Errorf("replay: event %s: %w", ev.ID, err)
		}
		now = pe.Time
		params := jsontext.Value("{}")
		noArgs := pe.Arguments.Value == nil
		if !noArgs {
			b, err := json.Marshal(pe.Arguments.Value)
			if err == nil {
				params = b
			}
		} else {
			sum.NoArguments++
		}
		d := &intercept.ActionDescriptor{TxnID: pe.TxnID, ToolName: pe.Tool, Upstream: pe.Upstream, Agent: pe.Agent,
			SessionID: pe.Session, Parameters: params, TargetEndpoint: pe.TargetEndpoint, ProtocolVersion: pe.ProtocolVersion,
			ToolInventoryHash: pe.ToolInventoryHash}
		if pe.AuthMethod != "" {
			// The agent was a principal's: its name is its own.
			d.Principal = &intercept.Principal{ID: pe.Agent, Method: pe.AuthMethod}
		}
		dec := intercept.Decide(ctx, p, d)
		if dec.Verdict == intercept.Allow {
			p.Forwarded(ctx, d, dec)
		}
		if noArgs && p.ReadsArguments(pe.Upstream, pe.Tool) {
			sum.Undetermined++
			sum.UndeterminedCalls = append(sum.UndeterminedCalls, replayChange{Seq: ev.Seq, Time: pe.Time, TxnID: pe.TxnID, Agent: pe.Agent,
				Session: pe.Session, Upstream: pe.Upstream, Tool: pe.Tool, Was: pe.Decision, WasReason: pe.Reason,
				Now: "undetermined", NowReason: "arguments not recorded", NoArguments: true})
			continue
		}
		if string(dec.Verdict) == pe.Decision {
			continue
		}
		sum.Changed++
		switch dec.Verdict {
		case intercept.Deny:
			sum.NewlyDenied++
		case intercept.Allow:
			sum.NewlyAllowed++
		case intercept.RequireApproval:
			sum.NewlyHeld++
		}
		sum.Changes = append(sum.Changes, replayChange{Seq: ev.Seq, Time: pe.Time, TxnID: pe.TxnID, Agent: pe.Agent, Session: pe.Session,
			Upstream: pe.Upstream, Tool: pe.Tool, Was: pe.Decision, WasReason: pe.Reason, Now: string(dec.Verdict), NowReason: dec.Reason,
			Rule: dec.RuleID, NoArguments: noArgs})
	}
	bar.done()
	if *asJSON {
		return writeInertJSON(out, sum)
	}
	for _, c := range sum.Changes {
		note := ""
		if c.Rule != "" { // a default decision has none
			note = " rule " + c.Rule
		}
		if c.NoArguments {
			note += " (arguments not recorded)"
		}
		// Agents may have named themselves: quoted inert, as sluice events does.
		fmt.Fprintf(out, "%s  %-10s %s/%s  %s (%s) -> %s (%s)%s\n", c.Time.Format(time.RFC3339), inert(c.Agent), inert(c.Upstream), inert(c.Tool),
			c.Was, c.WasReason, c.Now, c.NowReason, note)
	}
	if len(sum.UndeterminedCalls) > 0 {
		fmt.Fprintln(out, "undetermined (arguments not recorded; the new policy's conditions read them):")
		for _, c := range sum.UndeterminedCalls {
			fmt.Fprintf(out, "  %s  %-10s %s/%s was %s (%s)\n", c.Time.Format(time.RFC3339), inert(c.Agent), inert(c.Upstream), inert(c.Tool), c.Was, c.WasReason)
		}
	}
	fmt.Fprintf(out, "%d calls replayed under policy %.12s: %d changed (%d newly denied, %d newly allowed, %d newly held), %d undetermined (arguments not recorded)\n",
		sum.Calls, sum.PolicyVersion, sum.Changed, sum.NewlyDenied, sum.NewlyAllowed, sum.NewlyHeld, sum.Undetermined)
	if sum.Undetermined > 0 {
		fmt.Fprintln(out, "set audit.keep_arguments: true to record arguments (redacted) and replay such calls")
	}
	if sum.NoArguments > 0 {
		fmt.Fprintf(out, "%d calls had no recorded arguments (audit.keep_arguments is off): conditions on args saw {}\n", sum.NoArguments)
	}
	return nil
}

// progress draws a one-line bar on w for inputs big enough to wait for.
type progress struct {
	w     io.Writer
	total int
	last  int
}

func newProgress(w io.Writer, total int) *progress {
	if total < 5000 {
		w = nil
	}
	return &progress{w: w, total: total, last: -1}
}

func (p *progress) step(n int) {
	if p.w == nil {
		return
	}
	pct := n * 100 / p.total
	if pct == p.last {
		return
	}
	p.last = pct
	fmt.Fprintf(p.w, "\rreplaying [%-40s] %3d%% %d/%d", strings.Repeat("=", pct*40/100), pct, n, p.total)
}

func (p *progress) done() {
	if p.w != nil {
		fmt.Fprintln(p.w)
	}
}
