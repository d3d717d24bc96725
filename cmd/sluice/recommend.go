package main

import (
	"context"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/sluicehq/sluice/approval"
	"github.com/sluicehq/sluice/audit"
	"github.com/sluicehq/sluice/intercept"
	"github.com/sluicehq/sluice/internal/invisible"
	"github.com/sluicehq/sluice/inventory"
	"github.com/sluicehq/sluice/policy"
	"github.com/sluicehq/sluice/recommend"
	"github.com/sluicehq/sluice/telemetry"
)

// recommendConfig is the recommend: section.
type recommendConfig struct {
	// Schedule runs the engine this often while serving (e.g. 24h);
	// zero runs it only on demand (sluice recommend, the console).
	Schedule time.Duration `yaml:"schedule"`
	// Window is how far back evidence counts (default 720h, 30 days).
	Window time.Duration `yaml:"window"`
	// MinEvidence is the fewest events a recommendation rests on (5).
	MinEvidence int `yaml:"min_evidence"`
}

// TypeRecommendationDecided is the event of an approval or a decline.
const TypeRecommendationDecided = "sluice.recommendation_decided"

// signingKey is the gateway's Ed25519 key: inventory.key_file, or the one
// generated in the data directory. It signs inventories, approved policy
// versions and the A2A cards the gateway serves.
func (c *config) signingKey() (ed25519.PrivateKey, error) {
	if c.Inventory.KeyFile != "" {
		return inventory.LoadKey(c.Inventory.KeyFile)
	}
	dir, err := c.dataDir()
	if err != nil {
		return nil, err
	}
	return inventory.LoadOrCreateKey(filepath.Join(dir, inventory.KeyFileName))
}

// recommender runs the engine over the audit store and applies what an
// operator approves to the policy file.
type recommender struct {
	cfg        recommendConfig
	policyFile string // "" : inline policy, which approval cannot rewrite
	dataDir    string
	store      *recommend.Store
	events     *audit.Store
	key        ed25519.PrivateKey
	now        func() time.Time
	// agentClaims name the claims agents' JWTs name them by
	// (agentClaims): an admin JWT naming a recommendation's agent by one
	// of them cannot decide it.
	agentClaims []string
	mu          sync.Mutex // one approval at a time
}

func newRecommender(cfg *config, events *audit.Store) (*recommender, error) {
	dir, err := cfg.dataDir()
	if err != nil {
		return nil, err
	}
	key, err := cfg.signingKey()
	if err != nil {
		return nil, fmt.Errorf("policy signing key: %w", err)
	}
	return &recommender{cfg: cfg.Recommend, policyFile: cfg.PolicyFile, dataDir: dir, events: events, key: key, now: time.Now, agentClaims: agentClaims(cfg),
		store: recommend.OpenStore(filepath.Join(dir, "recommendations.json"))}, nil
}

// run reads the corpus and stores what it proposes; it returns the
// recommendations pending now.
func (rc *recommender) run(ctx context.Context) ([]recommend.Record, error) {
	if rc.policyFile == "" {
		return nil, errors.New("recommendations need policy_file: approving one rewrites that file, and an inline policy: is not rewritten; move the policy: section into a file of its own (the same keys, under policy: or at the top) and name it in the config with policy_file: FILE")
	}
	src, err := os.ReadFile(rc.policyFile)
	if err != nil {
		return nil, err
	}
	doc, err := recommend.ParseDoc(src, rc.policyFile)
	if err != nil {
		return nil, err
	}
	opts := recommend.Options{Now: rc.now, Window: rc.cfg.Window, MinEvidence: rc.cfg.MinEvidence}
	eng := recommend.NewEngine(doc, opts)
	since := rc.now().Add(-max(opts.Window, 90*24*time.Hour) - 24*time.Hour)
	for _, typ := range []string{telemetry.TypePolicyEnforced, telemetry.TypeIntentClassified} {
		if err := rc.events.Scan(ctx, audit.Filter{Type: typ, Since: since}, func(e telemetry.Event) error { eng.Observe(e); return nil }); err != nil {
			return nil, err
		}
	}
	// REMOVE_TOOL needs to know how far back the corpus reaches.
	if first, err := rc.events.Query(ctx, audit.Filter{Limit: 1}); err == nil && len(first) == 1 {
		eng.Observe(telemetry.Event{Type: "sluice.corpus_start", Time: first[0].Time})
	}
	return rc.store.Merge(eng.Recommendations(), rc.now())
}

// preview returns the policy diff approving id would make.
func (rc *recommender) preview(id string) (recommend.Record, string, error) {
	r, err := rc.store.Get(id)
	if err != nil {
		return r, "", err
	}
	// Only a pending recommendation has a change still to make: an
	// approved one's is in the policy already, and applying it again
	// failed (`recommend show` of an approved rule: "the changed policy
	// does not compile: id … is already used").
	if r.Status != recommend.StatusPending {
		return r, "", nil
	}
	src, err := os.ReadFile(rc.policyFile)
	if err != nil {
		return r, "", err
	}
	out, err := recommend.Apply(src, r.Recommendation)
	if err != nil {
		return r, "", err
	}
	return r, recommend.Diff(src, out), nil
}

// approve applies a pending recommendation: the new policy is checked,
// kept with an Ed25519 signature under data_dir/policy-history, written
// over the policy file (which the gateway reloads) and recorded.
func (rc *recommender) approve(ctx context.Context, id, by string) (recommend.Record, string, error) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	r, err := rc.store.Get(id)
	if err != nil {
		return r, "", err
	}
	if r.Status != recommend.StatusPending {
		return r, "", fmt.Errorf("%s is %s: %w", id, r.Status, recommend.ErrDecided)
	}
	if by == "" {
		return r, "", errors.New("a decision names who made it")
	}
	if r.Agent != "" && approval.SameAgent(by, r.Agent) {
		return r, "", fmt.Errorf("%s: %w", id, recommend.ErrSelfDecision)
	}
	src, err := os.ReadFile(rc.policyFile)
	if err != nil {
		return r, "", err
	}
	old, err := policy.Compile(src, rc.policyFile, policy.Options{})
	if err != nil {
		return r, "", fmt.Errorf("the policy file does not compile now: %w", err)
	}
	out, err := recommend.Apply(src, r.Recommendation)
	if err != nil {
		return r, "", err
	}
	p, err := policy.Compile(out, rc.policyFile, policy.Options{})
	if err != nil {
		return r, "", err
	}
	version := p.Version()
	hist := filepath.Join(rc.dataDir, "policy-history")
	if err := os.MkdirAll(hist, 0o700); err != nil {
		return r, "", err
	}
	base := filepath.Join(hist, fmt.Sprintf("%d-%s", rc.now().Unix(), version[:16]))
	sig := ed25519.Sign(rc.key, out)
	if err := os.WriteFile(base+".yaml", out, 0o600); err != nil {
		return r, "", err
	}
	if err := os.WriteFile(base+".sig", []byte(base64.StdEncoding.EncodeToString(sig)+"\n"), 0o600); err != nil {
		return r, "", err
	}
	tmp := rc.policyFile + ".sluice-tmp"
	mode := os.FileMode(0o644)
	if fi, err := os.Stat(rc.policyFile); err == nil {
		mode = fi.Mode().Perm()
	}
	if err := os.WriteFile(tmp, out, mode); err != nil {
		return r, "", err
	}
	if err := os.Rename(tmp, rc.policyFile); err != nil {
		return r, "", err
	}
	diff := recommend.Diff(src, out)
	rec, err := rc.store.Applied(r.Recommendation, by, version, rc.now())
	if err != nil {
		// The policy has changed: the audit trail says so even if the
		// store (a full disk) cannot.
		r.Status, r.Decision = recommend.StatusApproved, &recommend.Decision{Decision: "APPROVE", DecidedBy: by, DecidedAt: rc.now(), ResultingPolicyVersion: version}
		return r, diff, errors.Join(fmt.Errorf("the policy was changed to version %s, but the decision could not be stored: %w", version, err),
			rc.record(ctx, r, old.Version(), diff, base+".yaml"))
	}
	return rec, diff, rc.record(ctx, rec, old.Version(), diff, base+".yaml")
}

func (rc *recommender) decline(ctx context.Context, id, by, reason string) (recommend.Record, error) {
	if rec, err := rc.store.Get(id); err == nil && rec.Agent != "" && approval.SameAgent(by, rec.Agent) {
		return rec, fmt.Errorf("%s: %w", id, recommend.ErrSelfDecision)
	}
	rec, err := rc.store.Decline(id, by, reason, rc.now())
	if err != nil {
		return rec, err
	}
	return rec, rc.record(ctx, rec, "", "", "")
}

// record appends the decision to the audit store (RFC-010 §10.6).
// An error means the decision (already made) is not in the audit store.
func (rc *recommender) record(ctx context.Context, r recommend.Record, previous, diff, kept string) error {
	if rc.events == nil || r.Decision == nil {
		return nil
	}
	attrs := map[string]any{
		"recommendation_id": r.ID, "recommendation_type": string(r.Type), "decision": r.Decision.Decision,
		"decided_by": r.Decision.DecidedBy, "proposed_change": r.Change, "evidence": r.Evidence,
	}
	if r.Decision.ReasonCode != "" {
		attrs["reason_code"] = r.Decision.ReasonCode
	}
	if r.Decision.ResultingPolicyVersion != "" {
		attrs["resulting_policy_version"] = r.Decision.ResultingPolicyVersion
		attrs["previous_policy_version"] = previous
		attrs["diff"] = diff
		attrs["policy_copy"] = kept
	}
	err := rc.events.Append(ctx, telemetry.Event{Type: TypeRecommendationDecided, Time: r.Decision.DecidedAt, Agent: r.Agent, Tool: r.Tool, Attrs: attrs})
	if err == nil {
		err = rc.events.Flush(ctx)
	}
	if err != nil {
		return fmt.Errorf("%s was %s, but recording it failed: %w", r.ID, r.Status, err)
	}
	return nil
}

// schedule runs the engine every cfg.Schedule until ctx ends.
func (rc *recommender) schedule(ctx context.Context, log interface{ Warn(string, ...any) }) {
	if rc.cfg.Schedule <= 0 {
		return
	}
	t := time.NewTicker(rc.cfg.Schedule)
	defer t.Stop()
	for {
		if _, err := rc.run(ctx); err != nil && ctx.Err() == nil {
			log.Warn("recommendations: the scheduled run failed", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// List, Preview, Approve, Decline and Run are the recommender as the
// console uses it.
func (rc *recommender) List() ([]recommend.Record, error) { return rc.store.List() }
func (rc *recommender) Preview(id string) (recommend.Record, string, error) {
	return rc.preview(id)
}
func (rc *recommender) Approve(ctx context.Context, id, by string) (recommend.Record, string, error) {
	return rc.approve(ctx, id, by)
}
func (rc *recommender) Decline(ctx context.Context, id, by, reason string) (recommend.Record, error) {
	return rc.decline(ctx, id, by, reason)
}
func (rc *recommender) Run(ctx context.Context) ([]recommend.Record, error) { return rc.run(ctx) }

// handler serves /admin/recommendations on the admin listener:
//
//	GET  /admin/recommendations                 every stored one
//	POST /admin/recommendations                 run the engine now
//	GET  /admin/recommendations/{id}            one, with the diff approving it would make
//	POST /admin/recommendations/{id}/approve    {"by": "alice"}
//	POST /admin/recommendations/{id}/decline    {"by": "alice", "reason": "NOT_NEEDED"}
//
// A caller authenticated by an admin JWT is recorded as its subject, and
// "by" is ignored.
func (rc *recommender) handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /admin/recommendations", func(w http.ResponseWriter, r *http.Request) {
		recs, err := rc.store.List()
		replyRecommend(w, map[string]any{"recommendations": recs}, err)
	})
	mux.HandleFunc("POST /admin/recommendations", func(w http.ResponseWriter, r *http.Request) {
		recs, err := rc.run(r.Context())
		replyRecommend(w, map[string]any{"pending": recs}, err)
	})
	mux.HandleFunc("GET /admin/recommendations/{id}", func(w http.ResponseWriter, r *http.Request) {
		rec, diff, err := rc.preview(r.PathValue("id"))
		replyRecommend(w, map[string]any{"recommendation": rec, "diff": diff}, err)
	})
	mux.HandleFunc("POST /admin/recommendations/{id}/{action}", func(w http.ResponseWriter, r *http.Request) {
		var body struct {
			By     string `json:"by"`
			Reason string `json:"reason"`
		}
		if err := json.NewDecoder(io.LimitReader(r.Body, 1<<16)).Decode(&body); err != nil {
			adminError(w, http.StatusBadRequest, "body: "+err.Error())
			return
		}
		names := []string{body.By}
		if p := intercept.PrincipalFrom(r.Context()); p != nil {
			body.By = p.ID // an admin JWT's subject: proven, not claimed
			names = approval.Names(p, rc.agentClaims...)
		}
		if rec, err := rc.store.Get(r.PathValue("id")); err == nil && rec.Agent != "" && slices.ContainsFunc(names, func(n string) bool { return approval.SameAgent(n, rec.Agent) }) {
			// Whichever claim of the admin's token names it.
			replyRecommend(w, map[string]any{"recommendation": rec}, fmt.Errorf("%s: %w", rec.ID, recommend.ErrSelfDecision))
			return
		}
		switch r.PathValue("action") {
		case "approve":
			rec, diff, err := rc.approve(r.Context(), r.PathValue("id"), body.By)
			replyRecommend(w, map[string]any{"recommendation": rec, "diff": diff}, err)
		case "decline":
			rec, err := rc.decline(r.Context(), r.PathValue("id"), body.By, body.Reason)
			replyRecommend(w, map[string]any{"recommendation": rec}, err)
		default:
			adminError(w, http.StatusNotFound, "unknown action "+r.PathValue("action"))
		}
	})
	return mux
}

// parseDays reads "30d" as 30 days, or a time.Duration.
func parseDays(s string) (time.Duration, error) {
	if n, ok := strings.CutSuffix(s, "d"); ok {
		days, err := strconv.Atoi(n)
		if err != nil || days <= 0 {
			return 0, errors.New("bad number of days")
		}
		return time.Duration(days) * 24 * time.Hour, nil
	}
	d, err := time.ParseDuration(s)
	if err == nil && d <= 0 {
		err = errors.New("not positive")
	}
	return d, err
}

// replyRecommend writes v, or err: 409 for a decision on one already
// decided, 400 otherwise.
func replyRecommend(w http.ResponseWriter, v any, err error) {
	w.Header().Set("Content-Type", "application/json")
	if err != nil {
		status := http.StatusBadRequest
		switch {
		case errors.Is(err, recommend.ErrDecided):
			status = http.StatusConflict
		case errors.Is(err, recommend.ErrSelfDecision):
			status = http.StatusForbidden
		}
		w.WriteHeader(status)
		_ = json.NewEncoder(w).Encode(map[string]string{"error": err.Error()})
		return
	}
	_ = json.NewEncoder(w).Encode(v)
}

// runRecommend is `sluice recommend`.
func runRecommend(ctx context.Context, args []string, stdout io.Writer) error {
	verb := "run"
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		verb, args = args[0], args[1:]
	}
	fs := flag.NewFlagSet("recommend", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	cfgPath := fs.String("config", "sluice.yaml", "the gateway's config (data_dir, policy_file)")
	asJSON := fs.Bool("json", false, "print JSON")
	by := fs.String("by", "", "who decides (approve, decline)")
	reason := fs.String("reason", "", "decline: "+strings.Join(recommend.ReasonCodes, ", "))
	since := fs.String("since", "", "run: how far back evidence counts, as 30d or a duration such as 720h (default recommend.window, 30d)")
	var id string
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		id, args = args[0], args[1:]
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return &helpError{fs: fs}
		}
		return usageErrorf("%v", err)
	}
	// Flags end at the first word that is not one: `recommend show ID x
	// --config c.yaml` read no --config, and `recommend --config c.yaml
	// show ID` ran the engine instead of showing ID.
	if fs.NArg() > 0 {
		return usageErrorf("recommend %s: unexpected argument %q (the verb comes first: sluice recommend [run|list] or show|approve|decline ID, then the flags)", verb, fs.Arg(0))
	}
	if id != "" && (verb == "run" || verb == "list") {
		return usageErrorf("recommend %s: unexpected argument %q (%s takes no ID; show, approve and decline do)", verb, id, verb)
	}
	if *by == "" {
		*by = os.Getenv("USER")
	}
	if err := noDefaultFile(fs, "config", *cfgPath, "the gateway's config (its data_dir and policy_file)"); err != nil {
		return err
	}
	cfg, err := loadConfig(*cfgPath)
	if err != nil {
		return err
	}
	dir, err := cfg.dataDir()
	if err != nil {
		return err
	}
	events, err := audit.Open(filepath.Join(dir, audit.FileName), audit.Options{})
	if err != nil {
		return err
	}
	defer events.Close()
	if *since != "" {
		w, err := parseDays(*since)
		if err != nil {
			return usageErrorf("recommend: --since %q: want 30d or a duration such as 720h", *since)
		}
		cfg.Recommend.Window = w
	}
	rc, err := newRecommender(cfg, events)
	if err != nil {
		return err
	}
	var out any
	switch verb {
	case "run":
		recs, err := rc.run(ctx)
		if err != nil {
			return err
		}
		out = recs
	case "list":
		recs, err := rc.store.List()
		if err != nil {
			return err
		}
		out = recs
	case "show", "approve", "decline":
		if id == "" {
			return usageErrorf("recommend %s needs a recommendation id", verb)
		}
		if verb != "show" && *by == "" {
			return usageErrorf("recommend %s needs --by NAME: who decides, recorded with the decision", verb)
		}
		if verb == "decline" && *reason == "" {
			return usageErrorf("recommend decline needs --reason: one of %s", strings.Join(recommend.ReasonCodes, ", "))
		}
		switch verb {
		case "show":
			rec, diff, err := rc.preview(id)
			if err != nil {
				return err
			}
			out = map[string]any{"recommendation": rec, "diff": diff}
		case "approve":
			rec, diff, err := rc.approve(ctx, id, *by)
			if err != nil {
				return err
			}
			out = map[string]any{"recommendation": rec, "diff": diff}
		default:
			rec, err := rc.decline(ctx, id, *by, *reason)
			if err != nil {
				return err
			}
			out = rec
		}
	default:
		return usageErrorf("unknown recommend verb %q (run, list, show, approve, decline)", verb)
	}
	if *asJSON {
		return writeInertJSON(stdout, out)
	}
	switch v := out.(type) {
	case []recommend.Record:
		tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "ID\tTYPE\tSTATUS\tCONFIDENCE\tSUMMARY")
		for _, r := range v {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%.2f\t%s\n", r.ID, r.Type, r.Status, r.Confidence, inert(r.Summary))
		}
		return tw.Flush()
	case map[string]any:
		r := v["recommendation"].(recommend.Record)
		// The summary names the agent, which chose its own name.
		fmt.Fprintf(stdout, "%s %s (%s): %s\n", r.ID, r.Type, r.Status, inert(r.Summary))
		writeEvidence(stdout, r.Evidence, *cfgPath)
		if dc := r.Decision; dc != nil {
			fmt.Fprintf(stdout, "decided: %s by %s at %s", dc.Decision, inert(dc.DecidedBy), dc.DecidedAt.UTC().Format(time.RFC3339))
			if dc.ResultingPolicyVersion != "" {
				fmt.Fprintf(stdout, ", policy version %s", dc.ResultingPolicyVersion)
			}
			if dc.ReasonCode != "" {
				fmt.Fprintf(stdout, ", reason %s", dc.ReasonCode)
			}
			fmt.Fprintln(stdout)
		}
		if d, _ := v["diff"].(string); d != "" {
			fmt.Fprintf(stdout, "\n%s", inertDiff(d))
		}
	case recommend.Record:
		fmt.Fprintf(stdout, "%s %s: %s by %s (%s)\n", v.ID, v.Type, v.Status, v.Decision.DecidedBy, v.Decision.ReasonCode)
	}
	return nil
}

// writeEvidence prints what a recommendation rests on, as `recommend show`
// does without --json. Event-sourced text (tool names, txn ids) is quoted
// inert. The command it prints for an example call reads the events of
// cfgPath's data_dir: without --config it read the default data_dir's,
// and printed nothing for a gateway whose data_dir is another.
func writeEvidence(w io.Writer, e recommend.Evidence, cfgPath string) {
	fmt.Fprintf(w, "evidence: %d events in %s", e.Count, e.Window)
	if !e.FirstObserved.IsZero() {
		fmt.Fprintf(w, ", first %s, last %s", e.FirstObserved.UTC().Format(time.RFC3339), e.LastObserved.UTC().Format(time.RFC3339))
	}
	fmt.Fprintln(w)
	for _, k := range slices.Sorted(maps.Keys(e.Reasons)) {
		fmt.Fprintf(w, "  reason %s: %d\n", inert(k), e.Reasons[k])
	}
	if e.ClassifierVerdictConsistency > 0 {
		fmt.Fprintf(w, "  classifier agrees on %.0f%% of them\n", 100*e.ClassifierVerdictConsistency)
	}
	for _, k := range slices.Sorted(maps.Keys(e.Tools)) {
		fmt.Fprintf(w, "  tool %s: %s\n", inert(k), inert(e.Tools[k]))
	}
	for _, id := range e.ExampleTxnIDs {
		fmt.Fprintf(w, "  example call: %s (sluice events query --config %s --txn %s)\n", inert(id), shellQuote(cfgPath), inert(id))
	}
	if e.Note != "" {
		fmt.Fprintf(w, "  note: %s\n", inert(e.Note))
	}
}

// inertDiff is a recommend.Diff as the terminal gets it: a line holding a
// character the terminal would not show as itself (the YAML encoder
// quotes control characters but not format characters: a zero-width
// space in an agent's name, a right-to-left override in a tool's) keeps
// its "+ ", "- " or "  " and has the rest quoted, so the entry it adds
// cannot pass for another agent's or tool's.
func inertDiff(d string) string {
	lines := strings.SplitAfter(d, "\n")
	for i, l := range lines {
		body, nl := strings.CutSuffix(l, "\n")
		op, text := "", body
		if len(body) >= 2 {
			op, text = body[:2], body[2:]
		}
		if q := inert(text); q != text {
			lines[i] = op + q
			if nl {
				lines[i] += "\n"
			}
		}
	}
	return strings.Join(lines, "")
}

// writeInertJSON writes v as indented JSON, with the characters a
// terminal would not show as themselves (an agent's name with a
// right-to-left override or a zero-width space) as \u escapes, as
// `sluice events --json` writes them: the same value, shown as it is.
func writeInertJSON(w io.Writer, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	_, err = w.Write(append(invisible.AppendJSON(nil, b), '\n'))
	return err
}
