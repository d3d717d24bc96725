package main

import (
	"log/slog"
	"path/filepath"
	"strings"

	"github.com/sluicehq/sluice/audit"
	"github.com/sluicehq/sluice/gateway"
)

// logSummary says at start-up what the gateway will do: where each route
// is served (listen empty: stdio, for wrap), the policy, the classifier
// and its escalation, and where events go. Identity is logged by
// checkIdentity, problems by preflight's warnings.
func logSummary(logger *slog.Logger, cfg *config, ck *checked, ups []gateway.Upstream, listen string, tls bool) {
	if listen != "" {
		http, ws := "http://", "ws://"
		if tls {
			http, ws = "https://", "wss://"
		}
		for _, u := range ups {
			target := u.URL
			if target == "" {
				target = strings.Join(append([]string{u.Command}, u.Args...), " ")
			}
			logger.Info("route", "upstream", u.Name, "target", target,
				"streamable_http", http+listen+"/mcp/"+u.Name, "sse", http+listen+"/sse/"+u.Name, "websocket", ws+listen+"/ws/"+u.Name)
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
		onEscalate = "approve"
	}
	if onInjection == "" {
		onInjection = "approve"
	}
	if provider == "off" {
		logger.Info("classifier: off")
	} else {
		logger.Info("classifier", "provider", provider, "on_escalate", onEscalate, "on_injection", onInjection)
	}
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
