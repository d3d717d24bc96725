package classifier

import (
	"bytes"
	"context"
	"hash/maphash"
	"slices"
	"strings"
	"sync"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/sluicehq/sluice/intercept"
)

// Sources name where an axis verdict came from.
const (
	SourceConfig            = "config"                  // Options.Tools or Options.Upstreams
	SourceAnnotations       = "annotations"             // MCP tool annotations
	SourceCapabilityClass   = "capability_class"        // the tool's classes
	SourceToolName          = "tool_name"               // verbs in the name
	SourceToolDescription   = "tool_description"        // verbs or cues in the description
	SourceEndpoint          = "endpoint_config"         // the target endpoint's address
	SourceEndpointInference = "endpoint_inference"      // what the upstream's command line reveals
	SourceParameters        = "parameter_analysis"      // the call's arguments
	SourceCatalog           = "catalog"                 // Options.Sensitivity
	SourcePathInference     = "resource_path_inference" // resource names that look sensitive
	SourceNone              = "none"                    // nothing to go on
)

// BuiltinID is the classifier_id a Builtin puts on its verdicts;
// Lifecycle.Wrap replaces it with the session-scoped id.
const BuiltinID = "urn:sluice:classifier:builtin"

// Builtin is the default classifier: deterministic rules over the action
// descriptor, with no network and no state between calls. It is safe for
// concurrent use.
type Builtin struct {
	c *compiled
}

var _ Classifier = (*Builtin)(nil)

// NewBuiltin validates opts and returns a classifier using them.
func NewBuiltin(opts Options) (*Builtin, error) {
	c, err := compile(opts)
	if err != nil {
		return nil, err
	}
	return &Builtin{c: c}, nil
}

// Options returns the options the classifier was built with; composite
// scoring and routing of its verdicts should use the same.
func (b *Builtin) Options() Options { return b.c.opts }

// Classify classifies one call. It never fails: what it cannot tell gets
// a low confidence and, below the floor, the conservative default.
func (b *Builtin) immediate() bool { return true }

func (b *Builtin) Classify(_ context.Context, d *intercept.ActionDescriptor) (Verdict, error) {
	return b.classify(d), nil
}

// call is the per-call working state, pooled to keep classification cheap.
type call struct {
	d       *intercept.ActionDescriptor
	tc      ToolConfig
	hasTC   bool
	hints   hints
	name    []string // words of the tool name
	desc    []string // words of the description's first sentence
	cmd     []string // words of a local upstream's command line
	classes []string
	args    argFacts
	lex     lexical

	selfLocal, browserMgmt, namesHost bool
	// What the description's first sentence says of where the tool
	// reaches: describesLocal, describesExternal, describesRemote of
	// desc (toolFacts).
	descLocal, descExternal, descRemote bool
	// reads: the action type's verdict is Read (set before the
	// boundary is worked out).
	reads bool
}

var callPool = sync.Pool{New: func() any { return new(call) }}

// toolFacts is what a call's tool and upstream say about it whatever its
// arguments: the tool's configuration, hints, the words of its name,
// description and command line, and what they say of its action. It is
// worked out once per version of a tool (toolFacts) and only read after.
type toolFacts struct {
	version uint64 // toolVersion of the definition it is of

	tc              ToolConfig
	hasTC           bool
	hints           hints
	name, desc, cmd []string
	lex             lexical
	target          target
	selfLocal       bool // the tool is about the server itself (selfTool, saysLocal)
	browserMgmt     bool // browser management (browserManagement)
	namesHost       bool // the first sentence names a public host (namesPublicHost)
	// describesLocal, describesExternal and describesRemote of desc,
	// which the boundary asks of every call.
	descLocal, descExternal, descRemote bool
}

type toolKey struct{ upstream, tool string }

// maxToolFacts bounds the tools whose facts are kept; the least recently
// used go first. Tools with names longer than maxCachedName (MCP allows
// 128 characters) are worked out on every call instead: a cache keyed by
// what an agent or upstream chooses must not hold much of it.
const (
	maxToolFacts  = 4096
	maxCachedName = 256
)

// versionSeed keys toolVersion: whoever writes a tool's definition cannot
// aim at another version's hash.
var versionSeed = maphash.MakeSeed()

// toolVersion is a seeded hash of what a tool's facts are worked out
// from besides its name: its description, annotations and endpoint. A
// cache entry compares it instead of holding the strings, which an
// upstream could make as long as a message.
func toolVersion(d *intercept.ActionDescriptor) uint64 {
	var h maphash.Hash
	h.SetSeed(versionSeed)
	h.WriteString(d.ToolDescription)
	h.WriteByte(0)
	h.Write(d.Annotations)
	h.WriteByte(0)
	h.WriteString(d.TargetEndpoint)
	return h.Sum64()
}

// toolFacts returns the facts of d's tool, from the cache while the
// tool's description, annotations and endpoint are those they were worked
// out from.
func (c *compiled) toolFacts(d *intercept.ActionDescriptor) *toolFacts {
	key := toolKey{d.Upstream, d.ToolName}
	cacheable := len(d.ToolName) <= maxCachedName && len(d.Upstream) <= maxCachedName
	version := toolVersion(d)
	if cacheable {
		if tf, ok := c.facts.Get(key); ok && tf.version == version {
			return tf
		}
	}
	tf := &toolFacts{version: version}
	tf.tc, tf.hasTC = c.tool(d.Upstream, d.ToolName)
	tf.hints = parseHints(d.Annotations)
	// Words are slices of what they are read from: read them from copies
	// of the bounded parts kept, not from the whole description.
	name := strings.Clone(d.ToolName)
	tf.name = words(nil, name)
	first := strings.Clone(firstSentence(d.ToolDescription))
	tf.desc = cjkWords(words(nil, first), 0, first)
	tf.target = c.parseTarget(d.TargetEndpoint)
	if tf.target.local {
		tf.cmd = words(nil, tf.target.command)
	}
	tf.lex = lexicalAction(tf.name, tf.desc, tf.cmd)
	tf.selfLocal = saysLocal(d.ToolDescription) && !moves(tf.name) || selfTool(tf.name, tf.desc)
	tf.browserMgmt = browserManagement(tf.name, tf.cmd)
	tf.namesHost = namesPublicHost(first)
	tf.descLocal, tf.descExternal, tf.descRemote = describesLocal(tf.desc), describesExternal(tf.desc), describesRemote(tf.desc)
	if cacheable {
		c.facts.Add(toolKey{strings.Clone(d.Upstream), name}, tf)
	}
	return tf
}

func (b *Builtin) classify(d *intercept.ActionDescriptor) Verdict {
	c := b.c
	k := callPool.Get().(*call)
	defer func() {
		*k = call{args: argFacts{resources: k.args.resources[:0]}}
		callPool.Put(k)
	}()
	k.d = d
	tf := c.toolFacts(d)
	k.tc, k.hasTC, k.hints, k.name, k.desc, k.cmd, k.lex = tf.tc, tf.hasTC, tf.hints, tf.name, tf.desc, tf.cmd, tf.lex
	k.selfLocal, k.browserMgmt, k.namesHost = tf.selfLocal, tf.browserMgmt, tf.namesHost
	k.descLocal, k.descExternal, k.descRemote = tf.descLocal, tf.descExternal, tf.descRemote
	k.classes = k.tc.Classes
	if c.classes != nil {
		if more := c.classes(d.Upstream, d.ToolName); len(more) > 0 {
			k.classes = append(append([]string(nil), k.tc.Classes...), more...)
		}
	}
	target := tf.target
	c.scanArgs(d.Parameters, &k.args)
	// Only for tools whose name names no operation of its own: a
	// run_command's "command" is the payload, not an operation. A
	// subcommand identifier ("compute_vm_create") is an operation
	// whatever the tool is called ("compute"), unless the tool runs it.
	if (k.lex.nameVerb == "" || vagueVerbs[k.lex.nameVerb] || k.lex.nameVerb != "" && !execVerbs[k.lex.nameVerb] && hasRouterKey(d.Parameters)) &&
		!shellTool(k.name) {
		k.routeLex(d)
	}
	return b.finish(k, d, target)
}

// vagueVerbs name no operation: "manage_users" does whatever its action
// parameter says.
var vagueVerbs = wordSet("manage", "handle", "use", "perform", "do", "operate", "access", "work", "process")

// execVerbs run what their command parameter says: it is a payload.
var execVerbs = wordSet("run", "exec", "execute", "shell", "eval", "evaluate", "invoke", "call", "launch", "trigger", "send")

// shellWords name a shell: a tool called only that runs its command line,
// whatever the command's first word ("bash" with "grep …" runs grep).
var shellWords = wordSet("bash", "sh", "zsh", "fish", "shell", "terminal", "powershell", "pwsh", "cmd", "console")

func shellTool(name []string) bool {
	for _, w := range name {
		if !shellWords[w] {
			return false
		}
	}
	return len(name) > 0
}

// hasRouterKey is a cheap test for a subcommand parameter, before
// routerWords decodes the arguments.
func hasRouterKey(params jsontext.Value) bool {
	return bytes.Contains(params, []byte(`"command"`)) || bytes.Contains(params, []byte(`"subcommand"`)) || bytes.Contains(params, []byte(`"cmd"`))
}

func (k *call) routeLex(d *intercept.ActionDescriptor) {
	op, intent, cli := routerWords(d.Parameters)
	if k.lex.nameVerb != "" && !vagueVerbs[k.lex.nameVerb] && !cli {
		return
	}
	if n := len(op); cli {
		// "compute_vm_create", "deploy_app_logs_get": the verb of a
		// CLI's subcommand comes last.
		if kd, _ := verbOf(op[n-1]); kd != vNone {
			last := op[n-1]
			copy(op[1:], op[:n-1])
			op[0] = last
		}
	}
	for _, rw := range [2][]string{op, intent} {
		if len(rw) == 0 {
			continue
		}
		// The operation the call names, with the tool's name for its
		// objects ("create" + "dns_record").
		if la := lexicalAction(append(rw, k.name...), nil, k.cmd); la.action != "" && la.source == SourceToolName && la.nameVerb != "" && slices.Contains(rw, la.nameVerb) {
			la.source = SourceParameters
			k.lex = la
			return
		}
	}
}

func (b *Builtin) finish(k *call, d *intercept.ActionDescriptor, target target) Verdict {
	c := b.c
	v := Verdict{
		SessionID:    d.SessionID,
		ToolName:     d.ToolName,
		ClassifierID: BuiltinID,
		ClassifiedAt: c.now().Unix(),
		argTier:      k.args.tier,
		argTierKnown: len(c.rules) == 0,
	}
	at := c.actionType(k)
	k.reads = at.Classified == Read
	at = calibrate(AxisActionType, at, c.fitted)
	v.Axes.Set(AxisActionType, at)
	v.Axes.Set(AxisBoundary, calibrate(AxisBoundary, c.boundary(k, target), c.fitted))
	if c.profile == ProfileExtended {
		v.Axes.Set(AxisSensitivity, c.sensitivity(k, at.Classified))
		v.Axes.Set(AxisScale, c.scale(k, at.Classified))
		v.Axes.Set(AxisReversibility, c.reversibility(k, at.Classified))
	}
	ApplyConservativeDefaults(&v, c.opts)
	v.CapabilityClassVerdict, v.CapabilityClassConfidence = c.capabilityClass(k, v.Axes.Get(AxisActionType))
	v.ConsistentWithDeclaration = consistent(d, &v, k)
	v.CompositeConfidence = Composite(v, c.opts)
	return v
}

// hints are the MCP tool annotations that bear on classification.
type hints struct {
	readOnly, destructive, idempotent, openWorld optBool
}

// optBool is a JSON boolean that may be absent.
type optBool uint8

const (
	unset optBool = iota
	isFalse
	isTrue
)

// specDefaults reports whether the action hints say no more than the
// MCP specification's defaults for absent hints: not read-only,
// destructive, not idempotent (and open world, if said).
func (h hints) specDefaults() bool {
	return h.readOnly != isTrue && h.destructive != isFalse && h.idempotent != isTrue && h.openWorld != isFalse
}

func parseHints(v jsontext.Value) hints {
	var h hints
	walkJSON(v, false, func(w *jsonWalker, ev walkEvent) {
		if len(w.stack) != 1 || (ev.kind != 't' && ev.kind != 'f') {
			return
		}
		b := isFalse
		if ev.kind == 't' {
			b = isTrue
		}
		switch ev.key {
		case "readOnlyHint":
			h.readOnly = b
		case "destructiveHint":
			h.destructive = b
		case "idempotentHint":
			h.idempotent = b
		case "openWorldHint":
			h.openWorld = b
		}
	})
	return h
}

// lexical is what the tool's name and description say about its action.
type lexical struct {
	action     string
	conf       float64
	source     string
	nameRead   bool // the name's own verb is a read
	destroys   bool // the name has a destroying verb (delete, drop, purge…)
	infra      bool // infrastructure context
	jobObject  bool
	financial  bool
	admin      bool
	nameVerb   string
	descAction string
	modelRun   bool // the description says a model works the answer out (modelDoesIt)
	inPlace    bool // the name's first verb is one of inPlaceVerbs
}

// descAmbiguous are words that are verbs in names but usually nouns or
// prepositions past the first word of a description ("a set of", "in order
// to", "the list of").
var descAmbiguous = wordSet("set", "order", "type", "record", "link", "label", "tag", "mark", "star",
	"book", "run", "call", "post", "change", "drop", "stage", "scale", "return", "format", "request",
	"access", "comment", "check", "count", "list", "view", "show", "search", "query", "snapshot",
	"screenshot", "scan", "watch", "monitor", "sync", "copy", "share", "store", "trade", "charge",
	"transfer", "interact", "signal", "clean", "lock", "pin", "build", "start", "stop", "export", "import",
	"download", "upload", "commit", "merge", "push", "diff", "cat", "tail", "echo", "test", "stat",
	"ping", "capture", "render", "select", "fill", "press", "type", "close", "apply", "order", "reply",
	"react", "follow", "schedule", "message", "find", "get", "read", "write", "update", "create", "add")

// nounVerbs are verbs that are as often nouns at the start of a name
// ("schedule_list", "group_members_get", "credits_balance_get").
var nounVerbs = wordSet("record", "link", "label", "tag", "star", "book", "post", "stage", "format",
	"comment", "check", "count", "view", "snapshot", "screenshot", "scan", "watch", "monitor", "copy", "share",
	"store", "trade", "charge", "transfer", "signal", "lock", "pin", "build", "export", "import", "commit",
	"merge", "test", "capture", "order", "reply", "schedule", "group", "credit", "debit", "split", "switch",
	"clone", "return", "alert", "message", "reverse", "research", "audit", "estimate", "upload", "download", "backup")

var destroyVerbs = wordSet("delete", "remove", "drop", "destroy", "purge", "truncate", "wipe", "erase",
	"kill", "terminate", "uninstall", "revoke", "deprovision", "undeploy", "overwrite", "cleanup", "clean")

var financialWords = wordSet("payment", "payments", "pay", "payout", "payouts", "transfer", "transfers",
	"refund", "refunds", "charge", "charges", "invoice", "invoices", "billing", "wallet", "bank",
	"banking", "wire", "transaction", "transactions", "purchase", "buy", "sell", "trade", "stripe", "paypal",
	"crypto", "price", "prices", "funds", "payroll")

var adminWords = wordSet("admin", "administrator", "sudo", "root", "permission", "permissions", "role",
	"roles", "policy", "policies", "acl", "iam", "grant", "revoke", "privilege", "privileges", "config",
	"configuration", "settings", "member", "members", "collaborator", "collaborators", "firewall")

// lexicalAction reads the action type from the tool's name and the first
// sentence of its description, in the context of its upstream's command.
func lexicalAction(name, desc, cmd []string) lexical {
	var l lexical
	agent, prov, recording, runObject, startVerb, active := false, false, false, false, false, false
	worker := false // an agent that works, not a chat bot speaking for the caller
	// What a name is about comes before a preposition: "add_list_to_board"
	// adds a list, "copy_between_databases" copies rows.
	// Put into or taken out of a record ("add_project_to_task",
	// "remove_member_from_card"), it is that record that changes.
	head, inRecord := name, false
	for i, w := range name {
		if i > 0 && prepositions[w] {
			head = name[:i]
			for _, c := range name[i+1:] {
				inRecord = inRecord || dataObjects[c]
			}
			break
		}
	}
	onDevice := anyIn(name, deviceWords) || anyIn(desc, deviceWords)
	reportObject := false
	for _, w := range name {
		reportObject = reportObject || reportObjects[w]
	}
	for i, w := range name {
		// "set_active_board": which one the session uses, not the board.
		active = active || w == "active" || w == "current"
		recording = recording || recordingObjects[w]
		runObject = runObject || runObjects[w]
		if _, base := verbOf(w); startVerbs[base] {
			startVerb = true
		}
		l.jobObject = l.jobObject || jobObjects[w]
		agent = agent || agentObjects[w]
		worker = worker || agentObjects[w] && w != "bot" && w != "bots"
		prov = prov || !(inRecord && i < len(head)) && provisionObjects[w] ||
			(w == "key" || w == "keys") && i > 0 && keyQualifiers[name[i-1]] ||
			(w == "link" || w == "links") && i > 0 && linkQualifiers[name[i-1]] ||
			(w == "account" || w == "accounts") && i > 0 && accountQualifiers[name[i-1]] ||
			provisionHeads[w] && i < len(head) && !inRecord && headNoun(head, i) && creatingVerb(name) ||
			envVars[w] && i > 0 && (name[i-1] == "env" || name[i-1] == "environment")
		l.infra = l.infra || infraWords[w]
		l.destroys = l.destroys || destroyVerbs[w]
		l.financial = l.financial || financialWords[w]
		l.admin = l.admin || adminWords[w]
	}
	for _, w := range desc {
		l.jobObject = l.jobObject || jobObjects[w]
		agent = agent || agentObjects[w]
		worker = worker || agentObjects[w] && w != "bot" && w != "bots"
		l.infra = l.infra || infraWords[w]
	}
	for _, w := range cmd {
		l.infra = l.infra || infraWords[w]
	}
	resolve := func(k verbKind, base string, rest []string) string {
		if k == vMethod {
			for _, w := range rest {
				if k2, _ := verbOf(w); k2 != vNone && k2 != vMethod {
					k = k2
					break
				}
			}
		}
		switch k {
		case vControl:
			if recording {
				// Starting or stopping a trace, recording or
				// screencast observes: what is saved is an artefact.
				return Read
			}
			if l.jobObject || l.infra {
				return Execute
			}
			return Write
		case vDelegate:
			if agent {
				return Orchestrate
			}
			if prov && !active {
				// Assigning a role, a permission or a policy grants it.
				return Provision
			}
			return Write
		}
		a := k.action()
		if (base == "install" || base == "uninstall") && onDevice {
			// An app put on or taken off a phone, a simulator or an
			// emulator is that device's data, not a capability
			// provisioned beyond the session.
			return Write
		}
		if consumeVerbs[base] && anyIn(name, queueWords) && (anyIn(name, messageWords) || anyIn(rest, messageWords)) {
			// Taking a message off a queue (SQS, Pub/Sub, a Worker
			// queue) consumes it: the next reader does not see it.
			return Write
		}
		if base == "resolve" && (anyIn(rest, resolvableObjects) || anyIn(name, resolvableObjects)) {
			// Resolving a comment, a thread or an incident closes it;
			// resolving a name or an id looks it up.
			return Write
		}
		if (base == "generate" || base == "run") && reportObject {
			// Generating or running a report, an audit or a diagram
			// computes a document and returns it.
			return Read
		}
		if worker && !active && (a == Execute || a == Write && agentVerbs[base]) {
			// Running, creating or messaging an agent hands it work.
			return Orchestrate
		}
		if a == Write && (prov || l.infra) && !active {
			return Provision
		}
		if a == Write && runObject && startVerb {
			// Creating, submitting or applying a job, a run or a
			// migration starts it running.
			return Execute
		}
		return a
	}

	for i, w := range name {
		if k, base := verbOf(w); k != vNone && !nounCompound(name, i) {
			if nounVerbs[base] {
				// "schedule_list", "credits_get": a word that is
				// as often a noun names the object when a plain
				// verb follows it.
				for j := i + 1; j < len(name); j++ {
					if k2, b2 := verbOf(name[j]); k2 != vNone && !nounVerbs[b2] && !nounCompound(name, j) {
						i, w, k, base = j, name[j], k2, b2
						break
					}
				}
			}
			if base == "test" && len(name) == 1 {
				// "test X" checks X; "test" alone runs the tests.
				k = vExecute
			}
			l.action = resolve(k, base, name[i+1:])
			l.nameVerb = w
			l.nameRead = l.action == Read
			l.conf, l.source = 0.85, SourceToolName
			break
		}
	}
	descConf, descProv := 0.0, false
	for i, w := range desc {
		if i >= 8 {
			break
		}
		k, base := verbOf(w)
		if k == vNone || nounCompound(desc, i) || (i > 0 && descAmbiguous[base]) {
			continue
		}
		l.descAction = resolve(k, base, desc[i+1:])
		descConf = 0.7
		if i > 0 {
			descConf = 0.6
		}
		descProv = l.descAction == Write && creatingVerbs[base] && provisionObjectPhrase(desc[i+1:])
		break
	}
	if descProv && l.action == Write && !active && !l.admin {
		// The name says a change, its description what is changed: "a
		// mock server", "a serverless endpoint", "service accounts".
		// Name and description disagree on the kind: below the high
		// band.
		l.action, l.conf = Provision, 0.75
	}
	if readOnlyPhrase(desc) && (l.action == "" || l.action == Read) {
		l.descAction, descConf = Read, 0.9
	}
	if generatesWithModel(name, desc) {
		// Text, images or embeddings from a model: remote computation
		// (§5.2), not a change to anything.
		if l.action == Write {
			l.action = Execute
		}
		if l.descAction == Write {
			l.descAction = Execute
		}
	}
	l.inPlace = inPlaceVerbs[firstVerb(name)]
	if (l.action == Read || l.action == "" && l.descAction == Read) && !lookupVerbs[firstVerb(name)] && !lookupVerbs[firstVerb(desc)] && modelDoesIt(desc) {
		// "Explain the query in natural language using Davis CoPilot
		// AI", "summarize with GPT": the answer is a remote model's
		// (§5.2 remote computation), whatever the verb; a search ranked
		// "by AI" still reads.
		l.action, l.descAction, l.conf, l.source, l.modelRun = Execute, Execute, 0.85, SourceToolDescription, true
	}
	switch {
	case l.action != "" && l.descAction == l.action:
		l.conf = 0.95
	case l.action != "" && l.descAction != "":
		l.conf = 0.75
	case l.action == "" && l.descAction != "":
		l.action, l.conf, l.source = l.descAction, descConf, SourceToolDescription
	}
	if l.action != Read && reasoningTool(name) && !anyIn(name, agentObjects) {
		// A thinking scratchpad ("a multi-step reasoning tool") or a
		// calculator returns what it works out (§5.2: pure computation).
		l.action, l.conf, l.source = Read, 0.7, SourceToolName
	}
	if reportObject && l.action == Read && (l.nameVerb == "generate" || l.nameVerb == "run") {
		// A generated report may also be kept: below the high band.
		l.conf = min(l.conf, 0.85)
	}
	return l
}

// inPlaceVerbs compute a new form of what they are given, or give
// something kept a new form.
var inPlaceVerbs = wordSet("convert", "format", "transform")

// deviceWords name a phone or its stand-ins, on which apps are
// installed for testing.
var deviceWords = wordSet("device", "devices", "simulator", "simulators", "emulator", "emulators", "phone", "iphone",
	"ipad")

// consumeVerbs take messages off a queue; queueWords and messageWords
// name the queue and what is taken.
var (
	consumeVerbs = wordSet("get", "receive", "pull", "pop", "consume", "dequeue")
	queueWords   = wordSet("queue", "queues", "subscription", "subscriptions")
	messageWords = wordSet("message", "messages")
)

// resolvableObjects are records a "resolve" closes rather than looks up.
var resolvableObjects = wordSet("comment", "comments", "conversation", "conversations", "thread", "threads",
	"discussion", "discussions", "issue", "issues", "ticket", "tickets", "incident", "incidents", "alert", "alerts",
	"problem", "problems", "review", "reviews")

var prepositions = wordSet("to", "from", "in", "into", "on", "onto", "for", "between", "within", "across", "of", "with")

// reportObjects are documents computed and returned.
var reportObjects = wordSet("report", "reports", "audit", "diagram", "chart", "metadata", "summary")

// agentVerbs make, start or message an agent.
var agentVerbs = wordSet("create", "new", "send", "message", "reply", "spawn", "start", "launch")

// envVars after "env" or "environment" are a service's configuration.
var envVars = wordSet("var", "vars", "variable", "variables")

// runObjects run once created or submitted; startVerbs create or submit.
var (
	runObjects = wordSet("job", "jobs", "run", "runs", "migration", "migrations", "execution", "executions")
	startVerbs = wordSet("create", "submit", "apply", "new", "queue", "enqueue")
)

// recordingObjects are observations a control verb starts or stops.
var recordingObjects = wordSet("recording", "recordings", "trace", "traces", "tracing", "screencast", "profiling",
	"profiler", "capture")

// modelWords name a model or what one computes.
var modelWords = wordSet("ai", "model", "models", "llm", "llms", "gpt", "embedding", "embeddings", "inference",
	"completion", "completions", "diffusion", "gemini", "claude", "openai")

// generatesWithModel reports whether the tool's verb is "generate" and its
// name or description says a model does it.
func generatesWithModel(name, desc []string) bool {
	gen := false
	for _, ws := range [][]string{name, desc} {
		for i, w := range ws {
			if i < 3 {
				if _, base := verbOf(w); base == "generate" {
					gen = true
				}
			}
		}
	}
	if !gen {
		return false
	}
	for _, ws := range [][]string{name, desc} {
		for _, w := range ws {
			if modelWords[w] {
				return true
			}
		}
	}
	return false
}

// modelAgents are the words naming a model as the one doing the work:
// "using AI", "with an LLM", "via Copilot".
var modelAgents = wordSet("ai", "llm", "llms", "copilot", "gpt", "genai", "chatgpt")

// lookupVerbs find or fetch what exists: a model ranking the results
// does not make them computed.
var lookupVerbs = wordSet("search", "list", "get", "fetch", "find", "query", "retrieve", "lookup", "browse")

// provisionObjectPhrase reports whether the object of a description's
// verb — its head noun, the last of its words up to a preposition, at
// most five — names something provisioned: "a mock server", "Apex
// triggers", not "an app card item" or "a license key instance".
func provisionObjectPhrase(ws []string) bool {
	head := ""
	for i, w := range ws {
		if i >= 5 || prepositions[w] {
			break
		}
		head = w
	}
	return head != "instance" && head != "instances" && (provisionObjects[head] || provisionHeads[head])
}

// firstVerb is the base form of the first verb among ws; "" if none.
func firstVerb(ws []string) string {
	for _, w := range ws {
		if k, base := verbOf(w); k != vNone {
			return base
		}
	}
	return ""
}

// modelDoesIt reports whether description words say the work is done by a
// model: "using", "with", "via", "by" or "through", then within four words
// a word of modelAgents.
func modelDoesIt(desc []string) bool {
	for i, w := range desc {
		if w != "using" && w != "with" && w != "via" && w != "by" && w != "through" {
			continue
		}
		for j := i + 1; j < len(desc) && j <= i+4; j++ {
			if modelAgents[desc[j]] {
				return true
			}
		}
	}
	return false
}

// creatingVerb reports whether the name's verb makes, unmakes or
// reconfigures a thing (and so, on a provisionHeads noun, is Provision).
func creatingVerb(name []string) bool {
	for _, w := range name {
		if _, base := verbOf(w); creatingVerbs[base] {
			return true
		}
	}
	return false
}

var creatingVerbs = wordSet("create", "new", "add", "delete", "remove", "destroy", "drop", "fork", "setup",
	"set", "update", "put", "rollback", "deploy", "scale", "configure", "enable", "disable", "rename", "transfer",
	"copy", "duplicate", "clone", "share", "activate", "deactivate", "publish", "reconfigure", "renew",
	"redeploy", "promote", "invite", "uninvite", "archive", "unarchive", "import", "restore", "upgrade", "downgrade",
	"attach", "detach", "toggle")

// headNoun reports whether name[i] is what the name is about: its last
// word, or the word before a final verb ("cron_delete").
func headNoun(name []string, i int) bool {
	n := len(name)
	if i == n-1 {
		return true
	}
	if i == n-2 {
		k, _ := verbOf(name[n-1])
		return k != vNone
	}
	return false
}

// readOnlyPhrase reports whether description words call the tool
// read-only ("read-only", "read only", "readonly").
func readOnlyPhrase(ws []string) bool {
	for i, w := range ws {
		if w == "readonly" || w == "read" && i+1 < len(ws) && ws[i+1] == "only" {
			return true
		}
	}
	return false
}

// classAction reads an action type from capability classes such as
// "filesystem.read" or "shell.exec".
func classAction(classes []string) string {
	var buf [8]string
	for _, cl := range classes {
		for _, w := range words(buf[:0], cl) {
			switch w {
			case "admin", "provisioning", "iam":
				return Provision
			case "exec", "execution", "shell", "compute":
				return Execute
			case "management", "mutation", "mutate":
				return Write
			case "delegation", "agents":
				return Orchestrate
			}
			if k, _ := verbOf(w); k != vNone && k != vControl && k != vDelegate && k != vMethod {
				return k.action()
			}
		}
	}
	return ""
}

// actionType applies, in order: declared config, annotations (refined by
// classes and words), the tool's classes, then its name and description.
func (c *compiled) actionType(k *call) AxisVerdict {
	if k.tc.ActionType != "" {
		return AxisVerdict{Classified: k.tc.ActionType, Confidence: 1, Source: SourceConfig}
	}
	cls := classAction(k.classes)
	l := k.lex
	h := k.hints
	if a := k.args.sqlAction; a != "" && (l.action == "" || l.action == Execute || l.action == Read || l.action == Write) && (cls == "" || cls == Execute) {
		// A tool that runs SQL does what its statement does, whatever
		// its hints say (a SELECT through a "destructive" tool reads; an
		// INSERT through a "read-only" one writes).
		return AxisVerdict{Classified: a, Confidence: 0.9, Source: SourceParameters}
	}
	if l.action == Read && h.readOnly != isTrue && l.inPlace && (k.args.remoteRef || k.args.idScalar) &&
		!k.args.inlineData && !k.args.content {
		// Converting or formatting something kept (a node, a range of
		// a sheet) by its reference, given nothing to work on, changes
		// it; given the text or data it computes (§5.2 pure
		// computation). Which of the two the server does, the name does
		// not say: below the high band.
		return AxisVerdict{Classified: Write, Confidence: 0.7, Source: SourceParameters}
	}
	if l.modelRun {
		// Read-only to the server, but a remote model computes the
		// answer (§5.2): the hint does not make it a read.
		return AxisVerdict{Classified: Execute, Confidence: l.conf, Source: SourceToolDescription}
	}
	if h.readOnly == isTrue && !(savingVerbs[l.nameVerb] && k.args.pathArg) {
		if l.nameVerb != "" && !l.nameRead {
			// The server's hint against its own name ("execute_…",
			// "generate_…", "manage_…" said to be read-only):
			// annotations are the server's word, not evidence (MCP
			// calls them untrusted hints), so a Read below the high
			// band.
			return AxisVerdict{Classified: Read, Confidence: 0.85, Source: SourceAnnotations}
		}
		return AxisVerdict{Classified: Read, Confidence: 1, Source: SourceAnnotations}
	}
	if h.readOnly == isFalse || h.destructive == isTrue {
		// The server says the tool changes something; which kind of change
		// comes from the classes or the words.
		switch {
		case cls != "" && cls != Read:
			return AxisVerdict{Classified: cls, Confidence: 0.9, Source: SourceAnnotations}
		case l.action != "" && l.action != Read:
			conf := 0.7
			if l.conf >= 0.8 {
				conf = calibrated(k, l.action, l.conf)
			}
			return AxisVerdict{Classified: l.action, Confidence: conf, Source: SourceAnnotations}
		case l.nameRead && savingVerbs[l.nameVerb] && k.args.pathArg:
			return savedCopy(k, l)
		case l.nameRead && (h.destructive != isTrue || h.specDefaults()):
			// readOnlyHint=false is also the spec's default, and servers
			// set it on reads that can save an artefact (a screenshot
			// to a file). A read verb in the name against a non-
			// destructive "may modify" is a read, but a doubtful one.
			// So is one against hints that only spell out the spec's
			// defaults (destructive, not idempotent, open world), as
			// some SDKs and OpenAPI wrappers write them on every tool.
			return AxisVerdict{Classified: Read, Confidence: 0.6, Source: SourceToolName}
		case l.nameVerb == "" && l.action == Read && (h.destructive != isTrue || h.specDefaults()):
			// A name that is only nouns ("definition", "references")
			// and a description that starts by reading: as doubtful.
			return AxisVerdict{Classified: Read, Confidence: 0.6, Source: SourceToolDescription}
		}
		// "May modify" and no word of how: a guess (right a quarter of
		// the time on the corpus's dev split).
		return AxisVerdict{Classified: Write, Confidence: 0.5, Source: SourceAnnotations}
	}
	if cls != "" {
		return AxisVerdict{Classified: cls, Confidence: 0.9, Source: SourceCapabilityClass}
	}
	if l.action != "" {
		if l.action == Read && savingVerbs[l.nameVerb] {
			return savedCopy(k, l)
		}
		return AxisVerdict{Classified: l.action, Confidence: calibrated(k, l.action, l.conf), Source: l.source}
	}
	return AxisVerdict{Classified: Write, Confidence: 0.3, Source: SourceNone}
}

// savingVerbs read something and may keep a copy of it.
var savingVerbs = wordSet("download", "downloads", "export", "exports")

// savedCopy: a download or export given a file or directory to write is
// Write (the corpus guide: a download into a local file is Write); one
// that returns what it reads is a Read, but a less certain one.
func savedCopy(k *call, l lexical) AxisVerdict {
	if k.args.pathArg {
		return AxisVerdict{Classified: Write, Confidence: 0.8, Source: SourceParameters}
	}
	return AxisVerdict{Classified: Read, Confidence: min(l.conf, 0.8), Source: l.source}
}

// The annotations settle that a tool changes something, not which change
// it is: the kind's confidence is what the class or the words give it, as
// without annotations, so annotating a tool never lowers its confidence
// (on the dev split, kinds taken at 1 from annotations were right on
// 91 %).

// calibrated keeps a confidence of 0.9 or more for what is rarely wrong.
// A change to something the words do not place — neither bounded data (a
// message, a row, a file) nor a credential or configuration — might be
// either Write or Provision: on the corpus's dev split a third of the
// high-confidence misses were exactly that.
func calibrated(k *call, action string, conf float64) float64 {
	if conf >= 0.9 && action == Provision {
		// Provision against Write is the corpus's most frequent confusion
		// (RFC-010's "outlasts the session" is a judgement the words do
		// not settle): on the dev split Provision verdicts of 0.9 or more
		// were right on 89 %.
		return 0.85
	}
	if conf >= 0.9 && action == Execute {
		// Running something (a workflow, a job, a query, a script) is as
		// often labelled by what it runs (Write, Provision): on the dev
		// split a fifth of the high-confidence Execute verdicts were.
		return 0.85
	}
	if conf < 0.9 || (action != Write && action != Provision) || k.lex.infra {
		return conf
	}
	for _, w := range k.name {
		if dataObjects[w] && !dualObjects[w] || provisionObjects[w] {
			return conf
		}
	}
	return 0.85
}

// dualObjects are bounded data in one service and provisioned in another:
// a git branch is a ref, a database branch (Neon, Supabase, PlanetScale)
// a copy of the database with its own endpoint.
var dualObjects = wordSet("branch", "branches")

// dataObjects are bounded records: creating or changing one is Write.
var dataObjects = wordSet("message", "messages", "comment", "comments", "issue", "issues", "file", "files",
	"page", "pages", "row", "rows", "record", "records", "document", "documents", "doc", "docs", "note", "notes",
	"task", "tasks", "event", "events", "item", "items", "entry", "entries", "post", "posts", "reply", "replies",
	"reaction", "reactions", "label", "labels", "tag", "tags", "ticket", "tickets", "contact", "contacts",
	"card", "cards", "block", "blocks", "cell", "cells", "sheet", "sheets", "email", "emails", "draft", "drafts",
	"attachment", "attachments", "image", "images", "branch", "branches", "commit", "commits", "pr", "review",
	"reviews", "content", "text", "memory", "memories", "entity", "entities", "relation", "relations",
	"observation", "observations", "chat", "thread", "threads", "order", "orders", "invoice", "invoices",
	"customer", "customers", "product", "products", "deal", "deals", "lead", "leads", "company", "companies",
	"folder", "folders", "directory", "dir", "script", "snippet", "cache", "key", "keys", "value", "values",
	"form", "element", "input", "text", "status", "state", "story", "stories", "epic", "sprint", "milestone",
	"object", "objects", "collection", "collections", "table", "tables", "list", "lists", "playlist", "track")

// capabilityClass returns the declared class, the first of the tool's
// classes, or domain.action derived from the upstream's name.
func (c *compiled) capabilityClass(k *call, at AxisVerdict) (string, float64) {
	if k.tc.CapabilityClass != "" {
		return k.tc.CapabilityClass, 1
	}
	if len(k.classes) > 0 {
		return k.classes[0], 0.9
	}
	return c.derivedClass(k.d.Upstream, at.Classified), unitClamp(at.Confidence * 0.9)
}

// maxDerived bounds the classes compiled.derived keeps.
const maxDerived = 4096

type classKey struct{ upstream, action string }

// derivedClass is domain.action for an upstream and an action type,
// remembered: every call of a tool with no configured class asks for it,
// and splitting the upstream's name into words was most of classifying
// such a call.
func (c *compiled) derivedClass(upstream, action string) string {
	key := classKey{upstream, action}
	if v, ok := c.derived.Load(key); ok {
		return v.(string)
	}
	domain := classDomain(upstream)
	if domain == "" {
		domain = "tool"
	}
	class := domain + "." + strings.ToLower(action)
	if c.nDerived.Add(1) <= maxDerived {
		c.derived.Store(key, class)
	}
	return class
}

// classDomain turns an upstream name into a class segment: lower case,
// words joined by "_".
func classDomain(upstream string) string {
	var buf [8]string
	return strings.Join(words(buf[:0], upstream), "_")
}

// consistent compares the verdict with what the descriptor declares. An
// axis that fell back to its conservative default says nothing and is not
// compared; a boundary inside the declared one is consistent (a declared
// boundary is a ceiling).
func consistent(d *intercept.ActionDescriptor, v *Verdict, k *call) bool {
	at := v.Axes.Get(AxisActionType)
	if d.ActionTypeDeclared != "" && !at.ConservativeDefaultApplied && !strings.EqualFold(d.ActionTypeDeclared, at.Classified) {
		return false
	}
	if bd := v.Axes.Get(AxisBoundary); d.BoundaryDeclared != "" && !bd.ConservativeDefaultApplied {
		if rank(AxisBoundary, bd.Classified) > rank(AxisBoundary, canonicalValue(AxisBoundary, d.BoundaryDeclared)) {
			return false
		}
	}
	if decl := d.CapabilityClassDeclared; decl != "" {
		if k.tc.CapabilityClass != "" || len(k.classes) > 0 {
			// Both are configured names: they must agree, one may refine
			// the other ("finance.invoicing" and "finance.invoicing.read").
			got := v.CapabilityClassVerdict
			if !classRelated(decl, got) {
				return false
			}
		} else if implied := classAction([]string{decl}); implied != "" && !at.ConservativeDefaultApplied && implied != at.Classified {
			return false
		}
	}
	return true
}

func classRelated(a, b string) bool {
	a, b = strings.ToLower(a), strings.ToLower(b)
	return a == b || strings.HasPrefix(a, b+".") || strings.HasPrefix(b, a+".")
}

// canonicalValue returns the axis value spelled as in §5.1, ignoring case,
// or s unchanged.
func canonicalValue(axis, s string) string {
	for _, v := range axisValues[axis] {
		if strings.EqualFold(v, s) {
			return v
		}
	}
	return s
}
