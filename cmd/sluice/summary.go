package main

import (
	"log/slog"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/sluicehq/sluice/a2a"
	"github.com/sluicehq/sluice/audit"
	"github.com/sluicehq/sluice/classifier"
	"github.com/sluicehq/sluice/gateway"
	"github.com/sluicehq/sluice/internal/govern"
	"github.com/sluicehq/sluice/telemetry"
)

// logSummary says at start-up what the gateway will do: where each route,
// virtual server and A2A agent is served (at.Listen empty: stdio, for
// wrap), the policy, the classifier
// and its escalation, and where events go. Identity is logged by
// checkIdentity, problems by preflight's warnings.
func logSummary(logger *slog.Logger, cfg *config, ck *checked, ups []gateway.Upstream, at bound, tls bool) {
	if listen := at.Listen; listen != "" {
		http, ws := "http://", "ws://"
		if tls {
			http, ws = "https://", "wss://"
		}
		for _, u := range ups {
			target := withoutCredentials(u.URL)
			if u.URL == "" {
				target = telemetry.Scrub(strings.Join(append([]string{u.Command}, u.Args...), " "))
			}
			logger.Info("route", "upstream", u.Name, "target", target,
				"streamable_http", http+listen+"/mcp/"+u.Name, "sse", http+listen+"/sse/"+u.Name, "websocket", ws+listen+"/ws/"+u.Name)
		}
		for _, v := range cfg.VirtualServers {
			path := ""
			if v.Name != "" {
				path = "/" + v.Name
			}
			logger.Info("virtual server", "name", v.Name, "upstreams", strings.Join(v.Upstreams, ","), "naming", string(v.Naming),
				"streamable_http", http+listen+"/mcp"+path, "sse", http+listen+"/sse"+path, "websocket", ws+listen+"/ws"+path)
		}
		for _, a := range cfg.Agents {
			logger.Info("a2a agent", "agent", a.Name, "target", withoutCredentials(a.URL),
				"jsonrpc", http+listen+"/a2a/"+a.Name, "card", http+listen+"/a2a/"+a.Name+"/.well-known/agent-card.json")
		}
		if relay, _ := cfg.pushRelay(); relay && len(cfg.Agents) > 0 {
			logger.Info("a2a push notifications relayed", "relay", cfg.PublicURL+a2a.PushRelayPath)
		}
	}
	switch {
	case ck.Policy == nil:
		logger.Info("policy", "source", "none") // preflight warned
	default:
		rules, routes := ck.Policy.Counts()
		source := "inline"
		if cfg.PolicyFile != "" {
			source = cfg.PolicyFile + " (hot-reloaded)"
		}
		logger.Info("policy", "source", source, "version", ck.Policy.Version(), "rules", rules, "route_rules", routes)
	}
	cc := cfg.Classifier
	provider, onEscalate, onInjection := cc.Provider, string(cc.OnEscalate), string(cc.OnInjection)
	if provider == "" {
		provider = "builtin"
	}
	if onEscalate == "" {
		onEscalate = string(govern.ActionLog)
	}
	if onInjection == "" {
		onInjection = string(govern.ActionLog)
	}
	results := "not scanned"
	switch {
	case cc.OnResultInjection == resultWithhold:
		results = "scanned, withheld when they look like an injection (on_result_injection: withhold)"
	case cc.ScanResults:
		results = "scanned, recorded after the client has them (scan_results; on_result_injection: log)"
	}
	switch provider {
	case "off":
		logger.Info("classifier: off", "results", results)
	case "builtin":
		logger.Info("classifier", "provider", provider, "on_escalate", onEscalate, "on_injection", onInjection, "results", results)
	default:
		// Said at start-up: traffic over it is classified by the rules,
		// every such call escalating, which an operator should not learn
		// of from the events alone.
		logger.Info("classifier", "provider", provider, "on_escalate", onEscalate, "on_injection", onInjection, "results", results,
			"llm_budget", budgetSummary(cc.Budget))
	}
	logger.Info(escalationSummary(cfg, at.Admin))
	if cfg.Audit.Off {
		logger.Info("audit: off (audit.off); events reach metrics only")
		return
	}
	dir, _ := cfg.dataDirPath()
	onFailure, sync := cfg.Audit.OnFailure, cfg.Audit.Sync
	if onFailure == "" {
		onFailure = auditWarn
	}
	if sync == "" {
		sync = auditLinger
	}
	logger.Info("audit", "path", filepath.Join(dir, audit.FileName), "on_failure", onFailure, "sync", sync,
		"keep_arguments", cfg.Audit.KeepArguments)
}

// escalationSummary says in one line what the classifier's escalation
// handler will do with a call the policy allows but the classifier flags
// (uncertain: on_escalate; injection suspected: on_injection): hold it for
// whoever can answer, or record it and let the allow stand. admin is the
// admin API's bound address, empty without one.
func escalationSummary(cfg *config, admin string) string {
	cc := cfg.Classifier
	if cc.Provider == "off" {
		return "escalation: none (classifier off)"
	}
	var who []string
	if admin != "" {
		who = append(who, "operator approval on admin "+admin)
	}
	if cfg.Approvals.ClientMayAnswer {
		who = append(who, "the client's user where the client can be asked (elicitation, input_required)")
	}
	handles := func(key string, a govern.Action) string {
		switch a {
		case "":
			return "log only (" + key + " not set)"
		case govern.ActionLog:
			return "log only (" + key + ": log)"
		case govern.ActionDeny:
			return "deny (" + key + ": deny)"
		}
		if len(who) == 0 {
			return "log only (" + key + ": approve, but nobody can answer: no admin_listen, approvals.client_may_answer off)"
		}
		s := "hold for " + strings.Join(who, " or ")
		if admin == "" {
			s += ", else log only"
		}
		return s
	}
	return "escalation: " + handles("on_escalate", cc.OnEscalate) + "; injection: " + handles("on_injection", cc.OnInjection)
}

// withoutCredentials is raw, an upstream's or agent's URL, as the log
// shows it: without userinfo, query and fragment, where operators put
// credentials (as every call's target leaves them out). A URL that does
// not parse is not shown.
func withoutCredentials(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(URL not shown: it does not parse)"
	}
	u.User, u.RawQuery, u.ForceQuery, u.Fragment, u.RawFragment = nil, "", false, "", ""
	return u.String()
}

// budgetSummary says an LLM provider's budget (classifier.budget) and
// what happens past it.
func budgetSummary(b classifier.LLMBudget) string {
	per := func(n, def int) string {
		switch {
		case n < 0:
			return "no bound"
		case n == 0:
			n = def
		}
		return strconv.Itoa(n)
	}
	agent, total := per(b.PerAgent, classifier.DefaultLLMBudgetPerAgent), per(b.Total, classifier.DefaultLLMBudgetTotal)
	if agent != "no bound" {
		agent += " calls a minute"
	}
	return agent + " per agent, " + total + " in all (classifier.budget); calls past it are not sent and get every axis at its conservative default (as when the provider does not answer), so they escalate, counted in sluice_classifier_over_budget_total"
}
