package classifier

import (
	"encoding/hex"
	"strings"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"

	"github.com/sluicehq/sluice/intercept"
	"github.com/sluicehq/sluice/internal/idrand"
)

// RiskLevel is the INTENT layer's single risk level of a call.
type RiskLevel string

const (
	RiskLow      RiskLevel = "LOW"      // read-only, internal, reversible
	RiskMedium   RiskLevel = "MEDIUM"   // writes, or reads from outside
	RiskHigh     RiskLevel = "HIGH"     // writes to outside, or sensitive data
	RiskCritical RiskLevel = "CRITICAL" // financial, admin, irreversible, provisioning
)

// Risk factors an IntentRecord may list.
const (
	FactorWrite           = "write_operation"
	FactorExternalRead    = "external_read"
	FactorExternalWrite   = "external_write"
	FactorSensitiveData   = "sensitive_data"
	FactorCodeExecution   = "code_execution"
	FactorDelegation      = "delegation"
	FactorProvisioning    = "provisioning"
	FactorFinancial       = "financial"
	FactorAdmin           = "admin"
	FactorIrreversible    = "irreversible"
	FactorDestructiveHint = "destructive_hint"
	FactorUnbounded       = "unbounded_scale"
	FactorPromptInjection = "prompt_injection"
	// FactorToolPoisoning is followed by ":" and the rule of a finding in
	// the called tool's own description or schema (the inventory's scan).
	FactorToolPoisoning       = "tool_poisoning"
	FactorDeclarationMismatch = "declaration_mismatch"
	FactorLowConfidence       = "low_confidence"
	FactorUnclassified        = "unclassified_axis"
)

// IntentRecord is the INTENT layer's structured view of one call. Its
// JSON field names follow the seed schema; Sluice adds txn_id, the
// injection fields and the parsed fields it can fill from a descriptor.
type IntentRecord struct {
	IntentID             string             `json:"intent_id"`
	EntityID             string             `json:"entity_id"`
	Timestamp            time.Time          `json:"timestamp"`
	TxnID                string             `json:"txn_id,omitempty"`
	Parsed               ParsedIntent       `json:"parsed"`
	CapabilitiesRequired []string           `json:"capabilities_required"`
	RiskLevel            RiskLevel          `json:"risk_level"`
	RiskFactors          []string           `json:"risk_factors"`
	Confidence           float64            `json:"confidence"`
	ClarificationNeeded  bool               `json:"clarification_needed"`
	InjectionSuspected   bool               `json:"injection_suspected"`
	Injection            []InjectionFinding `json:"injection_findings,omitempty"`
}

// ParsedIntent is what the call is: the seed's parsed object, filled from
// the descriptor and the verdict.
type ParsedIntent struct {
	ActionType string `json:"action_type"`
	Tool       string `json:"tool"`
	Upstream   string `json:"upstream,omitempty"`
	// Target is "<boundary>:<where>", such as "external:evil.example" or
	// "local:stdio".
	Target      string   `json:"target"`
	Boundary    string   `json:"boundary"`
	Sensitivity string   `json:"sensitivity,omitempty"`
	Scale       string   `json:"scale,omitempty"`
	Resources   []string `json:"resources,omitempty"`
}

// IntentOptions configure NewIntentRecord. The zero value scans arguments
// for injection and uses time.Now.
type IntentOptions struct {
	// Now is the clock. Nil: time.Now.
	Now func() time.Time
	// SkipInjection turns the argument scan off, for callers that ran
	// DetectInjection themselves and pass its findings in Findings.
	SkipInjection bool
	// Findings are injection findings from elsewhere, such as a scan of
	// tool results; they count like the argument scan's.
	Findings []InjectionFinding
	// ToolPoisoning are the rules of the tool-poisoning findings in the
	// called tool's description and schema (see the inventory): each is a
	// risk factor, and any makes the call at least HIGH.
	ToolPoisoning []string
	// Options are the scoring options the verdict was made under, for the
	// escalate threshold. Zero: defaults.
	Options Options
	// RiskOnly builds only what the risk assessment is: RiskLevel,
	// RiskFactors, InjectionSuspected, Injection, ClarificationNeeded,
	// Confidence and EntityID — what a gateway records of every call —
	// and leaves out the id, time, parsed intent and capabilities, which
	// cost an allocation or a random read each.
	RiskOnly bool
}

// NewIntentRecord builds the IntentRecord of a call from its descriptor and
// its verdict (from any classifier). It assigns exactly one risk level by
// the seed's criteria, most severe first: provisioning, financial or admin
// changes and destructive verbs are CRITICAL; writes that leave the
// organisation, sensitive data, code execution, delegation and suspected
// injection are HIGH; other writes and external reads are MEDIUM; internal
// reads are LOW. An axis that fell back to its conservative default counts
// as that default.
func NewIntentRecord(d *intercept.ActionDescriptor, v Verdict, o IntentOptions) IntentRecord {
	now := time.Now
	if o.Now != nil {
		now = o.Now
	}
	at, bd := v.Axes.Get(AxisActionType), v.Axes.Get(AxisBoundary)
	action, boundary := at.Classified, bd.Classified
	if !ValidValue(AxisActionType, action) {
		action, at.ConservativeDefaultApplied = Write, true
	}
	if !ValidValue(AxisBoundary, boundary) {
		boundary, bd.ConservativeDefaultApplied = External, true
	}

	tw := intentToolWords(d)
	lex, h := tw.lex, tw.hints
	var facts argFacts
	if o.RiskOnly && v.argTierKnown {
		// The classifier's scan of these arguments found it, and the risk
		// needs nothing else of the facts.
		facts.tier = v.argTier
	} else {
		(&compiled{}).scanArgs(d.Parameters, &facts)
	}

	r := IntentRecord{
		EntityID:    d.Agent,
		TxnID:       d.TxnID,
		Confidence:  v.CompositeConfidence,
		RiskFactors: []string{},
	}
	if !o.RiskOnly {
		r.IntentID, r.Timestamp = newIntentID(), now().UTC()
		r.Parsed = ParsedIntent{
			ActionType: action,
			Tool:       d.ToolName,
			Upstream:   d.Upstream,
			Boundary:   boundary,
			Target:     intentTarget(boundary, d, &facts),
			Resources:  append([]string(nil), facts.resources...),
		}
	}
	if r.EntityID == "" {
		r.EntityID = "unknown"
	}
	var sensitivity string
	sens, sensKnown := v.Axes.Lookup(AxisSensitivity)
	if sensKnown && !sens.ConservativeDefaultApplied {
		sensitivity = sens.Classified
	}
	sc, scKnown := v.Axes.Lookup(AxisScale)
	if scKnown && sc.Classified == Unbounded && !sc.ConservativeDefaultApplied && action != Read {
		r.RiskFactors = append(r.RiskFactors, FactorUnbounded)
	}
	if !o.RiskOnly {
		r.Parsed.Sensitivity = sensitivity
		if scKnown {
			r.Parsed.Scale = sc.Classified
		}
		// Capabilities: the verdict's class and what crossing the
		// boundary needs.
		class := v.CapabilityClassVerdict
		if class == "" {
			class = "tool." + strings.ToLower(action)
		}
		r.CapabilitiesRequired = append(r.CapabilitiesRequired, class, netCapability(boundary))
		if facts.tier == Restricted || facts.tier == Regulated {
			r.CapabilitiesRequired = append(r.CapabilitiesRequired, "data:"+strings.ToLower(facts.tier))
		}
	}

	// Evidence of sensitive data: a classified sensitivity axis, or what
	// the arguments carry even when the axis is not active.
	tier := facts.tier
	if sensitivity != "" && rank(AxisSensitivity, sensitivity) > rank(AxisSensitivity, tier) {
		tier = sensitivity
	}
	sensitive := rank(AxisSensitivity, tier) >= rank(AxisSensitivity, Confidential)

	level := RiskLow
	raise := func(l RiskLevel, factor string) {
		if riskRank(l) > riskRank(level) {
			level = l
		}
		if factor != "" && !hasWord(r.RiskFactors, factor) {
			r.RiskFactors = append(r.RiskFactors, factor)
		}
	}
	mutates := action != Read
	external := boundary == External
	switch action {
	case Write:
		raise(RiskMedium, FactorWrite)
	case Execute:
		raise(RiskHigh, FactorCodeExecution)
	case Orchestrate:
		raise(RiskHigh, FactorDelegation)
	case Provision:
		raise(RiskCritical, FactorProvisioning)
	}
	if external {
		if mutates {
			raise(RiskHigh, FactorExternalWrite)
		} else {
			raise(RiskMedium, FactorExternalRead)
		}
	}
	if sensitive {
		raise(RiskHigh, FactorSensitiveData+":"+strings.ToLower(tier))
	}
	if mutates && lex.financial {
		raise(RiskCritical, FactorFinancial)
	}
	if mutates && lex.admin {
		raise(RiskCritical, FactorAdmin)
	}
	if mutates && lex.destroys {
		raise(RiskCritical, FactorIrreversible)
	}
	if rv, ok := v.Axes.Lookup(AxisReversibility); ok && mutates && rv.Classified == Irreversible && !rv.ConservativeDefaultApplied && rv.Confidence >= 0.8 && rv.Source != SourceAnnotations {
		raise(RiskCritical, FactorIrreversible)
	}
	if mutates && h.destructive == isTrue {
		raise(RiskHigh, FactorDestructiveHint)
	}

	// Injection: deterministic, so policy may act on it alone.
	findings := o.Findings
	if !o.SkipInjection {
		findings = append(append([]InjectionFinding(nil), findings...), DetectInjection(d.Parameters)...)
	}
	if len(findings) > 0 {
		r.InjectionSuspected = true
		r.Injection = findings
		raise(RiskHigh, "")
		for _, f := range findings {
			if factor := FactorPromptInjection + ":" + f.Kind; !hasWord(r.RiskFactors, factor) {
				r.RiskFactors = append(r.RiskFactors, factor)
			}
		}
	}

	if len(o.ToolPoisoning) > 0 {
		raise(RiskHigh, "")
		for _, rule := range o.ToolPoisoning {
			if factor := FactorToolPoisoning + ":" + rule; !hasWord(r.RiskFactors, factor) {
				r.RiskFactors = append(r.RiskFactors, factor)
			}
		}
	}

	// Clarification: the classifier could not tell what this is, or it
	// contradicts the declaration.
	if at.ConservativeDefaultApplied || bd.ConservativeDefaultApplied {
		r.ClarificationNeeded = true
		r.RiskFactors = append(r.RiskFactors, FactorUnclassified)
	}
	if !v.ConsistentWithDeclaration {
		r.ClarificationNeeded = true
		r.RiskFactors = append(r.RiskFactors, FactorDeclarationMismatch)
	}
	if o.Options.Thresholds.Route(v.CompositeConfidence) == MandatoryEscalate {
		r.ClarificationNeeded = true
		r.RiskFactors = append(r.RiskFactors, FactorLowConfidence)
	}
	r.RiskLevel = level
	return r
}

func riskRank(l RiskLevel) int {
	switch l {
	case RiskMedium:
		return 1
	case RiskHigh:
		return 2
	case RiskCritical:
		return 3
	}
	return 0
}

// intentTarget names where the call goes: the host of a URL argument, or
// the upstream's endpoint.
func intentTarget(boundary string, d *intercept.ActionDescriptor, f *argFacts) string {
	where := ""
	for _, r := range f.resources {
		if i := strings.Index(r, "://"); i > 0 {
			host := r[i+3:]
			if j := strings.IndexAny(host, "/?#"); j >= 0 {
				host = host[:j]
			}
			if k := strings.LastIndexByte(host, '@'); k >= 0 {
				host = host[k+1:]
			}
			where = host
			break
		}
	}
	if where == "" {
		switch t := d.TargetEndpoint; {
		case strings.HasPrefix(t, "stdio:"):
			where = "stdio"
		case t == "":
			where = "unknown"
		default:
			where = t
			if i := strings.Index(t, "://"); i >= 0 {
				where = t[i+3:]
				if j := strings.IndexAny(where, "/?#"); j >= 0 {
					where = where[:j]
				}
			}
		}
	}
	return strings.ToLower(boundary) + ":" + where
}

// newIntentID returns "int_" and 16 random hex digits.
func newIntentID() string {
	var b [8]byte
	idrand.Read(b[:])
	var id [4 + 16]byte
	copy(id[:], "int_")
	hex.Encode(id[4:], b[:])
	return string(id[:])
}

// netCapabilities are the capabilities crossing each boundary needs.
var netCapabilities = map[string]string{External: "net:external", IntraOrg: "net:intra-org", Local: "net:local"}

func netCapability(boundary string) string {
	if c, ok := netCapabilities[boundary]; ok {
		return c
	}
	return "net:" + strings.ToLower(boundary)
}

// intentTool is what a tool's name, description and annotations say of
// its action, as NewIntentRecord reads them.
type intentTool struct {
	version uint64 // toolVersion of the definition it is of
	lex     lexical
	hints   hints
}

// intentTools keeps intentTool by upstream and tool while the definition
// is the one it was read from: the words of a tool change only with its
// definition, not from one call to the next. Bounded as toolFacts.
var intentTools, _ = lru.New[toolKey, intentTool](maxToolFacts)

func intentToolWords(d *intercept.ActionDescriptor) intentTool {
	key := toolKey{d.Upstream, d.ToolName}
	cacheable := len(d.ToolName) <= maxCachedName && len(d.Upstream) <= maxCachedName
	version := toolVersion(d)
	if cacheable {
		if t, ok := intentTools.Get(key); ok && t.version == version {
			return t
		}
	}
	// Copies of the bounded parts the words are read from, as toolFacts.
	name, first := strings.Clone(d.ToolName), strings.Clone(firstSentence(d.ToolDescription))
	var nameBuf, descBuf [32]string
	t := intentTool{
		version: version,
		lex:     lexicalAction(words(nameBuf[:0], name), words(descBuf[:0], first), nil),
		hints:   parseHints(d.Annotations),
	}
	if cacheable {
		intentTools.Add(toolKey{strings.Clone(d.Upstream), name}, t)
	}
	return t
}
