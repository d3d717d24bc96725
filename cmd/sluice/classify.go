package main

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/sony/gobreaker/v2"

	"github.com/sluicehq/sluice/classifier"
	"github.com/sluicehq/sluice/internal/govern"
	"github.com/sluicehq/sluice/telemetry"
)

// classifierConfig is the `classifier:` section of sluice.yaml.
type classifierConfig struct {
	// Provider is builtin (the default: rules, no network), off, openai
	// (also Ollama, vLLM, llama.cpp server), anthropic or gemini.
	Provider string `yaml:"provider"`
	// Model, BaseURL: for LLM providers; defaults per vendor.
	Model   string `yaml:"model"`
	BaseURL string `yaml:"base_url"`
	// APIKeyEnv or APIKeyFile names where the provider's key is; it is
	// never logged.
	APIKeyEnv  string `yaml:"api_key_env"`
	APIKeyFile string `yaml:"api_key_file"`
	// Timeout of one LLM classification (default 2s); a timeout yields a
	// low-confidence verdict, never a block.
	Timeout time.Duration `yaml:"timeout"`
	// OnEscalate is what happens to a call the policy allows but the
	// classifier is not confident about: log (the default: the event is
	// recorded and the allow stands) or approve (hold it for a human, where
	// one can answer: an operator through admin_listen, or the client's
	// user with approvals.client_may_answer and a client that can be
	// asked; otherwise the allow stands).
	OnEscalate govern.Action `yaml:"on_escalate"`
	// OnInjection is the same for calls whose arguments look like a prompt
	// injection: log (the default), approve (held where someone can
	// answer) or deny.
	OnInjection govern.Action `yaml:"on_injection"`
	// ScanResults also scans the results of tools, resources/read and
	// prompts/get for prompt injection (after the client got them): a finding is logged and recorded as a
	// sluice.injection_in_result event with the call's txn_id.
	ScanResults bool `yaml:"scan_results"`
	// OnResultInjection is what happens to an action's result that looks
	// like a prompt injection: log (the default; with scan_results) or
	// withhold (scanned before the client has it, whatever scan_results
	// says: the client gets a soft deny saying why, or an error for a
	// read, and the event is recorded with withheld: true).
	OnResultInjection string `yaml:"on_result_injection"`
	// Budget bounds the requests an LLM provider is sent a minute, per
	// agent (per_agent_per_minute, 60) and in all (total_per_minute,
	// 600); negative is no bound. A call past it is not sent and gets the
	// verdict of one the provider did not answer (every axis at its
	// conservative default; it escalates), recorded with source
	// over_budget on its intent_classified event and counted in
	// sluice_classifier_over_budget_total.
	Budget classifier.LLMBudget `yaml:"budget"`
	// Options: profile, weights, thresholds, declared tools, trust zones,
	// sensitivity catalog.
	classifier.Options `yaml:",inline"`
}

// The values of classifier.on_result_injection.
const (
	resultLog      = "log"
	resultWithhold = "withhold"
)

// scansResults reports whether actions' results are scanned for prompt
// injection: scan_results, or on_result_injection: withhold.
func (cc *classifierConfig) scansResults() bool {
	return cc.ScanResults || cc.OnResultInjection == resultWithhold
}

// advisor builds the classifier stage around the policy decider.
// An LLM provider that cannot be reached at start-up is probed again every
// 30s until it answers, for as long as ctx lasts.
// inventory, if not nil, gives an LLM provider's prompt the tools it
// classifies against.
// onBreaker, if not nil, hears the provider's circuit breaker change state.
func (c *config) advisor(ctx context.Context, logger *slog.Logger, inventory func() classifier.InventorySnapshot, onBreaker func(provider, from, to string)) (*govern.Advisor, error) {
	cc := c.Classifier
	if err := cc.validate(); err != nil {
		return nil, err
	}
	cc.Options = c.classifierOptions()
	adv := &govern.Advisor{Options: cc.Options, OnEscalate: cc.OnEscalate, OnInjection: cc.OnInjection}
	adv.OperatorAnswers = c.AdminListen != "" // clients that can be asked say so per call
	switch cc.Provider {
	case "off":
		return adv, nil
	case "", "builtin":
		b, err := classifier.NewBuiltin(cc.Options)
		if err != nil {
			return nil, fmt.Errorf("classifier: %w", err)
		}
		adv.Classifier = b
	case "openai", "anthropic", "gemini":
		key, err := classifier.LoadKey(cc.APIKeyEnv, cc.APIKeyFile)
		if err != nil {
			return nil, fmt.Errorf("classifier: %w", err)
		}
		llm, err := classifier.NewLLM(classifier.LLMOptions{
			Provider: classifier.Provider(cc.Provider), Model: cc.Model, BaseURL: cc.BaseURL, APIKey: key,
			Timeout: cc.Timeout, Profile: cc.Profile, Weights: cc.Weights, Floors: cc.Floors, Inventory: inventory,
			SecretKeys: c.Audit.SecretKeys, // what the record keeps out does not go to the provider either
			Budget:     cc.Budget,
			OnBreakerStateChange: func(from, to gobreaker.State) {
				// gobreaker holds its lock here: report, never call back in.
				logger.Warn("classifier circuit breaker", "provider", cc.Provider, "from", from.String(), "to", to.String())
				if onBreaker != nil {
					onBreaker(cc.Provider, from.String(), to.String())
				}
			},
		})
		if err != nil {
			return nil, fmt.Errorf("classifier: %w", err)
		}
		// An unreachable provider at start-up marks the classifier inactive:
		// every call then gets composite 0.0 and goes to escalation; it is
		// neither a block nor a bypass.
		if err := llm.Probe(ctx); err != nil {
			logger.Warn("classifier provider unreachable; classifier inactive (every call escalates) until it answers", "provider", cc.Provider, "err", err)
			go func() {
				tick := time.NewTicker(30 * time.Second)
				defer tick.Stop()
				for !llm.Active() {
					select {
					case <-ctx.Done():
						return
					case <-tick.C:
					}
					if llm.Probe(ctx) == nil {
						logger.Info("classifier provider reachable again; classifier active", "provider", cc.Provider)
					}
				}
			}()
		}
		adv.Classifier = llm
	}
	adv.OnAdvice = func(a *govern.Advice) {
		level := slog.LevelDebug
		if a.Escalated || a.SoleDenyViolation || len(a.Assessment.Mismatch) > 0 || a.Err != nil {
			level = slog.LevelInfo
		}
		if a.Unheld == govern.UnheldNobodyAnswers {
			// Flagged, but the policy's allow stands: said loudly when the
			// operator asked for a hold nobody could answer.
			level = slog.LevelInfo
		}
		if !logger.Enabled(context.Background(), level) {
			return // the attributes below cost more than the rest of the advice
		}
		attrs := []any{"txn_id", a.Descriptor.TxnID, "tool", telemetry.ToolName(a.Descriptor.ToolName), "agent", a.Descriptor.Agent,
			"composite", a.Assessment.Composite, "disposition", a.Assessment.Disposition.String(),
			"risk", a.Intent.RiskLevel, "injection", a.Intent.InjectionSuspected, "latency", a.Latency}
		if len(a.Assessment.Mismatch) > 0 {
			attrs = append(attrs, "event", classifier.EventIntentClassificationMismatch, "mismatch", a.Assessment.Mismatch)
		}
		if a.SoleDenyViolation {
			attrs = append(attrs, "event", govern.EventSoleDenyViolation)
		}
		if a.Unheld != "" {
			attrs = append(attrs, "unheld", a.Unheld)
		}
		if a.Err != nil {
			attrs = append(attrs, "err", a.Err)
		}
		logger.Log(context.Background(), level, "intent_classified", attrs...)
	}
	return adv, nil
}

// classifierOptions is the classifier section's options with what the
// upstreams' own configuration tells the built-in classifier: the names
// (never the values) of the environment each stdio upstream is started
// with, its env and the names its inherit_env gives in full
// (UpstreamConfig.EnvNames). An upstream whose inherit_env has a pattern
// (PREFIX*, "*") may be given anything of the gateway's: its names are
// left unknown. Names the classifier section gives for an upstream
// (upstreams.NAME.env_names) are kept as they are.
func (c *config) classifierOptions() classifier.Options {
	o := c.Classifier.Options
	var ups map[string]classifier.UpstreamConfig
	for _, u := range c.Upstreams {
		if u.Command == "" || o.Upstreams[u.Name].EnvNames != nil {
			continue
		}
		names := make([]string, 0, len(u.Env)+len(u.InheritEnv))
		for n := range u.Env {
			names = append(names, n)
		}
		known := true
		for _, n := range u.InheritEnv {
			if strings.Contains(n, "*") {
				known = false
				break
			}
			names = append(names, n)
		}
		if !known {
			continue
		}
		if ups == nil {
			ups = maps.Clone(o.Upstreams)
			if ups == nil {
				ups = map[string]classifier.UpstreamConfig{}
			}
		}
		slices.Sort(names)
		uc := ups[u.Name]
		uc.EnvNames = slices.Compact(names)
		ups[u.Name] = uc
	}
	if ups != nil {
		o.Upstreams = ups
	}
	return o
}

// validate checks the section: the classifier's options, the escalation
// actions and the provider's name.
func (cc *classifierConfig) validate() error {
	if err := cc.Options.Validate(); err != nil {
		return fmt.Errorf("classifier: %w", err)
	}
	for _, a := range []struct {
		name string
		v    govern.Action
		deny bool
	}{{"on_escalate", cc.OnEscalate, false}, {"on_injection", cc.OnInjection, true}} {
		switch a.v {
		case "", govern.ActionApprove, govern.ActionLog:
		case govern.ActionDeny:
			if !a.deny {
				return fmt.Errorf("classifier.%s: deny is not allowed: the classifier's verdict may escalate, never deny", a.name)
			}
		default:
			return fmt.Errorf("classifier.%s: %q is not approve, log or deny", a.name, a.v)
		}
	}
	switch cc.OnResultInjection {
	case "", resultLog, resultWithhold:
	default:
		return fmt.Errorf("classifier.on_result_injection: %q is not log or withhold", cc.OnResultInjection)
	}
	switch cc.Provider {
	case "", "off", "builtin", "openai", "anthropic", "gemini":
		return nil
	}
	return fmt.Errorf("classifier.provider: %q is not builtin, off, openai, anthropic or gemini", cc.Provider)
}

// checkAnswerable warns when on_escalate or on_injection asks for calls to
// be held but nobody could answer them: no admin API for an operator and
// clients may not answer. Such calls are then only recorded, and the
// policy's allow stands.
func (c *config) checkAnswerable(ck *checked) {
	if c.Classifier.Provider == "off" || c.AdminListen != "" || c.Approvals.ClientMayAnswer {
		return
	}
	for _, a := range []struct {
		key string
		v   govern.Action
	}{{"on_escalate", c.Classifier.OnEscalate}, {"on_injection", c.Classifier.OnInjection}} {
		if a.v == govern.ActionApprove {
			ck.warn("classifier.%s: approve, but nobody could answer a held call (no admin_listen for an operator, approvals.client_may_answer is off): "+
				"such calls are only recorded and the policy's decision stands; set admin_listen (and answer with `sluice approvals`), "+
				"approvals.client_may_answer: true, or %s: log", a.key, a.key)
		}
	}
}
