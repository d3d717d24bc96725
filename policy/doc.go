// Package policy is Sluice's deterministic decider: the policy behind every
// tools/call (RFC-0002 decisions and default deny, ADR-027 tool classes,
// class-based route rules and evidence).
//
// A policy is YAML, either bare or under a top-level `policy:` key:
//
//	policy:
//	  default: deny                  # deny | allow, for calls no rule decides
//	  result_mode: tool_result       # tool_result | throw (the default)
//	  tool_classes:                  # tool -> non-empty ordered list of classes
//	    read_document: [source:local, source:sensitive]
//	    web_search: [sink:network]
//	    files/write_file: [store:persistent]   # upstream/tool pins one upstream
//	  rules:
//	    - id: allow-reads
//	      match: {match_any_class: [source:local]}
//	      decision: allow            # allow | deny | require_approval
//	      reason: local reads are allowed
//	    - id: big-transfers
//	      match: {match_tool: transfer_funds}
//	      when: 'args.amount > 1000' # CEL; see cond.go for the variables
//	      decision: require_approval
//	      reason: transfers over 1000 need a human
//	  route_rules:
//	    - id: no_sink_after_sensitive_source
//	      after: {match_any_class: [source:sensitive]}
//	      deny:  {match_any_class: [sink:network, sink:external]}
//	      scope: agent               # session (default) | agent
//	      window: 24h                # default: as long as memory holds it
//	      reason: no network sink after a sensitive read
//	  manifests:                     # per agent; "*" for agents without their own
//	    agent-a: {allowed_classes: [source:local], boundary_ceiling: intra-org}
//	  allow: [echo]                  # shorthand for name rules
//	  deny: [send_email]
//	  require_approval: [demo/pay]
//
// Deny beats require_approval beats allow whatever the order of the rules;
// route rules and manifests only deny. Within one verdict the first rule in
// file order (rules, then the allow/deny/require_approval lists) names the
// decision. A call no rule decides gets the default.
//
// Use it as the gateway's decider, with a Watcher to follow the file:
//
//	w, err := policy.NewWatcher("policy.yaml", policy.WatchOptions{})
//	if err != nil { ... }
//	go w.Run(ctx)
//	icp := &intercept.Interceptor{Decider: w}
//
// Route memory lives in a Store shared by every policy a Watcher loads, so
// it survives reloads. A Policy and a Watcher are safe for concurrent use.
package policy
