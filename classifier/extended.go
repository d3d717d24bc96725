package classifier

// The extended axes (§5.2) are inferred from weaker evidence than action
// type and boundary, and their confidences say so: without a catalog or a
// declaration most calls end below the floor and carry the conservative
// default, as RFC-010 §6.1 expects.

// sensitivity: declared config, then the catalog and the shapes of the
// arguments; a read of a public web page is Public; otherwise a guess of
// Internal that the floor turns into Restricted.
func (c *compiled) sensitivity(k *call, action string) AxisVerdict {
	if k.tc.Sensitivity != "" {
		return AxisVerdict{Classified: k.tc.Sensitivity, Confidence: 1, Source: SourceConfig}
	}
	f := &k.args
	if len(c.rules) > 0 && k.d.TargetEndpoint != "" {
		c.catalog(f, k.d.TargetEndpoint)
	}
	if f.tier != "" {
		return AxisVerdict{Classified: f.tier, Confidence: f.tierConf, Source: f.tierSource}
	}
	if action == Read && f.urlZone == External {
		return AxisVerdict{Classified: Public, Confidence: 0.65, Source: SourceParameters}
	}
	return AxisVerdict{Classified: Internal, Confidence: 0.5, Source: SourceNone}
}

// scale: an unbounded signal (wildcard, empty filter, all/recursive, an
// unrestricted statement) wins over bounds; then explicit bounds and
// lists; then a single identifier. Reads with no bound are Unbounded
// (§5.4).
func (c *compiled) scale(k *call, action string) AxisVerdict {
	if k.tc.Scale != "" {
		return AxisVerdict{Classified: k.tc.Scale, Confidence: 1, Source: SourceConfig}
	}
	f := &k.args
	p := func(v string, conf float64) AxisVerdict {
		return AxisVerdict{Classified: v, Confidence: conf, Source: SourceParameters}
	}
	switch {
	case f.sqlScale == Unbounded:
		return p(Unbounded, 0.85)
	case f.wildcard:
		return p(Unbounded, 0.85)
	case f.allFlag:
		return p(Unbounded, 0.75)
	case hasWord(k.name, "all"):
		return AxisVerdict{Classified: Unbounded, Confidence: 0.75, Source: SourceToolName}
	case f.sqlScale == Bounded:
		return p(Bounded, 0.8)
	case f.limit:
		return p(Bounded, 0.85)
	case f.pluralTarget || f.maxArray > 1:
		return p(Bounded, 0.8)
	case f.maxArray == 1:
		return p(Targeted, 0.75)
	case f.idScalar:
		return p(Targeted, 0.8)
	case hasWord(k.name, "many") || hasWord(k.name, "bulk") || hasWord(k.name, "batch") || hasWord(k.name, "multiple"):
		return AxisVerdict{Classified: Bounded, Confidence: 0.6, Source: SourceToolName}
	}
	if action == Read {
		return AxisVerdict{Classified: Unbounded, Confidence: 0.5, Source: SourceNone}
	}
	return AxisVerdict{Classified: Unbounded, Confidence: 0.4, Source: SourceNone}
}

// reversibility: declared config; a read changes nothing; annotations; then
// the verb. External commitments (a sent message, a merged change) cannot
// be taken back.
func (c *compiled) reversibility(k *call, action string) AxisVerdict {
	if k.tc.Reversibility != "" {
		return AxisVerdict{Classified: k.tc.Reversibility, Confidence: 1, Source: SourceConfig}
	}
	if action == Read {
		return AxisVerdict{Classified: Reversible, Confidence: 0.95, Source: SourceToolName}
	}
	l := &k.lex
	switch {
	case k.hints.destructive == isTrue:
		return AxisVerdict{Classified: Irreversible, Confidence: 0.85, Source: SourceAnnotations}
	case l.destroys:
		return AxisVerdict{Classified: Irreversible, Confidence: 0.8, Source: SourceToolName}
	case commitVerbs[l.nameVerb]:
		return AxisVerdict{Classified: Irreversible, Confidence: 0.75, Source: SourceToolName}
	case k.hints.destructive == isFalse && k.hints.readOnly == isFalse:
		// Additive only: what was added can be removed.
		return AxisVerdict{Classified: Reversible, Confidence: 0.75, Source: SourceAnnotations}
	case addVerbs[l.nameVerb]:
		return AxisVerdict{Classified: Reversible, Confidence: 0.65, Source: SourceToolName}
	case changeVerbs[l.nameVerb]:
		return AxisVerdict{Classified: Recoverable, Confidence: 0.6, Source: SourceToolName}
	}
	return AxisVerdict{Classified: Irreversible, Confidence: 0.4, Source: SourceNone}
}

var (
	commitVerbs = wordSet("send", "post", "publish", "merge", "push", "pay", "transfer", "charge", "refund",
		"reply", "comment", "notify", "submit", "approve", "deploy", "trade", "buy", "sell", "purchase",
		"order", "invite", "execute", "exec", "run", "eval", "evaluate")
	addVerbs    = wordSet("create", "add", "insert", "upload", "star", "fork", "save", "append", "mkdir", "copy", "tag", "label", "pin", "subscribe", "follow")
	changeVerbs = wordSet("update", "edit", "patch", "set", "rename", "move", "modify", "replace", "toggle", "enable", "disable", "mark", "change", "upsert", "write")
)

func hasWord(ws []string, w string) bool {
	for _, x := range ws {
		if x == w {
			return true
		}
	}
	return false
}
