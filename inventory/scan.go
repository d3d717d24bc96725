package inventory

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"html"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/go-json-experiment/json/jsontext"
	"golang.org/x/text/unicode/norm"
)

// Severity ranks a scan finding.
type Severity int

const (
	// SeverityLow: worth knowing, common in benign tools (a long
	// description, a mention of another tool).
	SeverityLow Severity = iota + 1
	// SeverityMedium: unusual for a benign tool; a tool with a finding of
	// this severity or above is reported as suspicious.
	SeverityMedium
	// SeverityHigh: the shape of a known attack.
	SeverityHigh
)

func (s Severity) String() string {
	switch s {
	case SeverityLow:
		return "low"
	case SeverityMedium:
		return "medium"
	case SeverityHigh:
		return "high"
	}
	return fmt.Sprintf("Severity(%d)", int(s))
}

// MarshalText writes the severity as "low", "medium" or "high".
func (s Severity) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// UnmarshalText reads what MarshalText writes.
func (s *Severity) UnmarshalText(b []byte) error {
	switch string(b) {
	case "low":
		*s = SeverityLow
	case "medium":
		*s = SeverityMedium
	case "high":
		*s = SeverityHigh
	default:
		return fmt.Errorf("unknown severity %q", b)
	}
	return nil
}

// Finding is one thing the poisoning scan noticed in a tool.
type Finding struct {
	// Rule names the check, e.g. "instruction_tag"; see Scan.
	Rule     string   `json:"rule"`
	Severity Severity `json:"severity"`
	// Field is a JSON Pointer into the tool object: "/description",
	// "/inputSchema/properties/sidenote/description". A finding in an
	// object member's name points at that member and ends in "#name".
	Field string `json:"field"`
	// Excerpt is the text around the match, with whitespace collapsed and
	// invisible characters written as \u{XXXX}. For Unicode tag
	// characters it is the ASCII text they hide.
	Excerpt string `json:"excerpt"`
}

// DefaultMaxDescription is the description length, in characters (runes),
// above which Scan reports "long_description".
const DefaultMaxDescription = 2000

// ScanOptions tunes Scan. The zero value uses the defaults.
type ScanOptions struct {
	// MaxDescription is the description length in characters above which
	// a description is reported as long. Zero means DefaultMaxDescription;
	// negative disables the check.
	MaxDescription int
	// ForeignTools are the names of tools offered by other upstreams and
	// not by this tool's own (the Inventory passes them so). A
	// mention of one of them in this tool's text is reported as
	// "cross_server_reference", the mark of tool shadowing. Only
	// distinctive names are looked for: those with '_', '-' or '.', or
	// camelCase, and at least 5 characters.
	ForeignTools []string
}

// MaxSeverity returns the highest severity among fs, or 0 if fs is empty.
func MaxSeverity(fs []Finding) Severity {
	var m Severity
	for _, f := range fs {
		m = max(m, f.Severity)
	}
	return m
}

// Suspicious reports whether fs has a finding of SeverityMedium or above:
// the scan's verdict that a tool looks poisoned.
func Suspicious(fs []Finding) bool { return MaxSeverity(fs) >= SeverityMedium }

// rule is a pattern over normalized text (NFKC, whitespace collapsed, invisible
// characters dropped, lower case).
type rule struct {
	name     string
	severity Severity
	// need lists substrings of which the text must contain one for re to
	// be worth running; nil runs it always. It only saves time.
	need []string
	re   *regexp.Regexp
	// skip, if set, discards a match that only looks like the pattern.
	skip func(match string) bool
}

func re(s string) *regexp.Regexp { return regexp.MustCompile(s) }

// isPublicKey discards a key file that is the public half (id_ed25519.pub):
// servers that manage SSH keys ask for it.
func isPublicKey(m string) bool { return strings.HasSuffix(m, ".pub") }

// negatedWords discards "passwords are never included in the response":
// a statement about what the tool does not do.
var negatedWords = regexp.MustCompile(`\b(never|not|no|without)\b|n't\b`)

func negated(m string) bool { return negatedWords.MatchString(m) }

func need(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, "|")
}

// rules are the text checks, from the published tool-poisoning examples
// (Invariant Labs, Trail of Bits, CyberArk, the Damn Vulnerable MCP
// Server) and tuned against the descriptions of popular benign servers.
// They are compiled once and never change.
var rules = []rule{
	// <IMPORTANT>, <SYSTEM>, <instructions>, [SYSTEM], <|im_start|>:
	// markup aimed at the model, not at a reader of the docs.
	{"instruction_tag", SeverityHigh, need("<"), re(`<\s*/?\s*(important|system|instructions?|system[ _-]?prompt|hidden|secret|admin|override|critical|assistant|sys|developer|prompt|(important|system|hidden|secret|admin|critical|developer|assistant)[ _-]+(notes?|notices?|instructions?|messages?|prompts?|rules?|directives?|context|override|requirements?))(\s[^<>]{0,200})?\s*/?>`), nil},
	{"instruction_tag", SeverityHigh, need("["), re(`\[\s*/?\s*(system|important|instructions?|admin|hidden|inst)\s*\]`), nil},
	{"instruction_tag", SeverityHigh, need("<|"), re(`<\|\s*(im_start|im_end|system|user|assistant|endoftext)\s*\|>`), nil},

	// Keeping the user in the dark.
	{"concealment", SeverityHigh, need("not|n't|dont|never|without|no need"), re(`\b(do not|don'?t|never|without|not to|no need to)\s+(tell|telling|mention|mentioning|inform|informing|notify|notifying|reveal|revealing|alert|alerting|disclose|disclosing)\b[^.!?]{0,80}?\b(the user|users?|humans?|anyone|them)\b`), nil},
	{"concealment", SeverityHigh, need("not|n't|dont|never|no need"), re(`\b(do not|don'?t|never|no need to)\s+(mention|reveal|disclose)\b`), nil},
	{"concealment", SeverityHigh, need("silently|secretly|covertly|quietly|discreetly"), re(`\b(silently|secretly|covertly|quietly|discreetly)\s+(send|post|upload|forward|copy|read|call|include|append|exfiltrate|transmit|share|add|cc|bcc|access|run|execute)\b`), nil},
	{"concealment", SeverityHigh, need("hide|conceal"), re(`\b(hide|conceal)\s+(this|it|these|that|the)\b[^.!?]{0,40}\bfrom\b`), nil},
	{"concealment", SeverityHigh, need("user"), re(`\b(the )?user (must|should) not (know|see|notice|be told|find out)\b`), nil},
	{"concealment", SeverityMedium, need("as if"), re(`\bpresent (it|this|them|the \w+) as if\b`), nil},

	// Overriding the model's instructions.
	{"instruction_override", SeverityHigh, need("ignore|disregard|forget|override|bypass"), re(`\b(ignore|disregard|forget|override|bypass)\s+(all\s+|any\s+)?(of\s+)?(the\s+|your\s+)?(previous|prior|above|earlier|preceding|other|existing|system|original)\s+(instructions?|prompts?|rules|directives|guidelines|messages|context)\b`), nil},
	{"instruction_override", SeverityHigh, need("ignore"), re(`\bignore (all )?previous\b`), nil},
	{"instruction_override", SeverityMedium, need("from now on|you are now|new instructions"), re(`\b(from now on|you are now|new instructions:)`), nil},

	// Line jumping: demands on the model before or around a call. Benign
	// servers order their tools the same way ("call list_projects before
	// calling this tool", "always call this tool when the user asks…": 40 of
	// 2,471 real tools, issue 11), so on its own it is low; the payload it
	// introduces (a secret, concealment, an exfiltration) is what the other
	// rules look for.
	{"precondition", SeverityLow, need("before"), re(`\bbefore (using|calling|invoking|running|executing|you use|you call|responding|answering|searching|returning|asking|doing anything)\b`), nil},
	{"precondition", SeverityLow, need("must"), re(`\byou must (first|always)\b|\bmust first\b|\bmust always (call|use|read|include|send|invoke|run|consult)\b`), nil},
	{"precondition", SeverityLow, need("always"), re(`\balways (call|use|consult|invoke|run)\s+this tool\b`), nil},
	{"precondition", SeverityLow, need("when this tool"), re(`\bwhen this tool is (available|present|loaded|installed|enabled)\b`), nil},

	// Steering other tools: the mark of shadowing.
	{"tool_shadowing", SeverityMedium, need("when"), re(`\bwhen(ever)?\s+(\(?[a-z0-9_.-]+\)?\s+){1,3}(is|are)\s+(invoked|called|used|executed)\b`),
		func(m string) bool { return strings.Contains(m, "this tool") || strings.Contains(m, "the tool") }},
	{"tool_shadowing", SeverityMedium, need("side|also present"), re(`\bside[ -]effects? on\b|\balso present\b`), nil},
	{"tool_shadowing", SeverityMedium, need("all|every|any"), re(`\b(send|forward|redirect|route|cc|bcc)\s+(all|every|any)\s+(e-?mails?|messages?|data|requests?|traffic)\b`), nil},
	{"tool_shadowing", SeverityMedium, need("the recipient|the destination|the target|the address|the url|the endpoint"), re(`\b(change|replace|set)\s+the\s+(recipient|destination|target|address|url|endpoint)\b`), nil},

	// Secrets and configuration that a tool has no business asking for.
	{"secret_reference", SeverityHigh, need("ssh|id|mcp.json|cursor|claude_desktop|.aws|netrc|npmrc|pypirc|git-credentials|.docker|.kube|/etc/|~/.|wallet"), re(`~/\.ssh(/[a-z0-9_.-]*)?|\.ssh/[a-z0-9_.-]*|\bid[ _-]?(rsa|dsa|ecdsa|ed25519)\b(\.pub\b)?|\bmcp\.json\b|~/\.cursor|\.cursor/|claude_desktop_config|\.aws/(credentials|config)|\.netrc\b|\.npmrc\b|\.pypirc\b|\.git-credentials|\.docker/config\.json|\.kube/config|/etc/(passwd|shadow|sudoers)|~/\.(bashrc|zshrc|bash_history|zsh_history|profile|gnupg|config)\b|\bwallet\.dat\b`), isPublicKey},
	// A .env file read or sent is a secret; named among other file names
	// ("configuration files: .env, Dockerfile") it is documentation.
	{"secret_reference", SeverityHigh, need(".env"), re(`\b(read|reads|reading|cat|open|include|send|pass|upload|copy|dump|exfiltrate|contents? of)\b[^.!?\n]{0,30}(^|[\s'"` + "`" + `(/~])\.env\b`), nil},
	{"secret_reference", SeverityLow, need(".env"), re(`(^|[\s'"` + "`" + `(/~])\.env\b`), nil},
	{"secret_reference", SeverityMedium, need("key|token|credential|password|secret"), re(`\b(private[ _-]?keys?|ssh[ _-]?keys?|api[ _-]?keys?|access[ _-]?tokens?|credentials|passwords?|secrets?)\b[^.!?]{0,40}\b(and|to|as|into|in) (pass|send|include|append|post|forward|upload|the (response|query|sidenote|body|message))`), negated},
	// A verb whose object is the secret: "include the API keys", "extract
	// all credentials". Only determiners may stand between them, so "include
	// separate periods per API key" and "read from 'secrets/…'" do not count,
	// and the verb must be a word of its own ("Access-Control-Allow-
	// Credentials" is a header).
	{"secret_reference", SeverityMedium, need("key|token|credential|password|secret|variables"), re(`(^|[\s(])(read|reads|reading|cat|open|access|include|send|pass|upload|collect|gather|extract|dump|exfiltrate|leak|share|copy|steal|harvest)\s+((the|all|any|every|your|their|its|user'?s|these|those|stored|saved|local|system|relevant|available|master)\s+){0,3}(private[ _-]?keys?|ssh[ _-]?keys?|api[ _-]?keys?|access[ _-]?tokens?|credentials|passwords?|secrets|env(ironment)? variables|tokens)\b`), nil},
	{"secret_reference", SeverityMedium, need("content from reading|read"), re(`\bcontent from reading\b|\b(read|reading) (the )?(file|contents?) (at|of|from) ~`), nil},

	// Moving data somewhere it should not go.
	{"data_exfiltration", SeverityMedium, need("content|cop"), re(`\b(pass|append|include|attach|concatenate|send|post|forward|upload|add|embed|insert)\s+(its|their|the|this|that|an identical|a full|full|entire|all)\s+(full\s+|entire\s+|complete\s+|whole\s+)?(content|contents|copy|copies)\b[^.!?]{0,60}\b(as|to|into|in)\b`), nil},
	{"data_exfiltration", SeverityMedium, need("http"), re(`\b(post|send|upload|forward|transmit|exfiltrate)\b[^.!?]{0,80}https?://`), nil},
	{"data_exfiltration", SeverityMedium, need("]("), re(`!\[[^\]]*\]\(https?://[^)]*[?&][^)]*\)`), nil},
	{"data_exfiltration", SeverityMedium, need("messages|chats|conversations|emails"), re(`\b(include|list) (a|the) (full )?(list of )?(last|previous|recent|all) (messages|chats|conversations|emails)\b`), nil},

	// Pressure to comply: invented consequences, urgency.
	{"coercion", SeverityMedium, need("important"), re(`\b(very\s+){2,}important\b`), nil},
	{"coercion", SeverityMedium, need("otherwise"), re(`\botherwise\b[^.!?]{0,30}\b(will not|won'?t|cannot|can'?t) work\b`), nil},
	{"coercion", SeverityMedium, need("crash|lost"), re(`\b(system|application|app|server|tool|program) (will|would) crash\b|\b(all )?data will be lost\b`), nil},
	{"coercion", SeverityMedium, need("requirement|not optional"), re(`\b(critical|mandatory) (compliance )?requirement\b|\bnot optional\b`), nil},
	{"coercion", SeverityMedium, need("will"), re(`\bwill (cause|result in|lead to)\b[^.!?]{0,40}\b(data loss|failures?|crash(es)?)\b`), nil},

	// Shell payloads in prose.
	{"shell_command", SeverityMedium, need("chmod|rm |curl|wget|base64|/dev/tcp|nc "), re(`\bchmod\s+-r\b|\brm\s+-rf\b|\bcurl\b[^|]{0,80}\|\s*(ba|z)?sh\b|\bwget\b[^|]{0,80}\|\s*(ba|z)?sh\b|\bbase64\s+(-d|--decode)\b|/dev/tcp/|\bnc\s+-e\b`), nil},

	// Text hidden from a rendered view.
	{"hidden_markup", SeverityMedium, need("<!--"), re(`<!--[\s\S]*?(-->|$)`), nil},
	// Markdown's comments, link definitions no one links to.
	{"hidden_markup", SeverityMedium, need("]:"), re(`\[[^\]]{0,40}\]:\s*(#|<>)\s*[("']`), nil},
	// An element styled out of sight.
	{"hidden_markup", SeverityMedium, need("style"), re(`<[a-z][a-z0-9]*\s[^<>]*\bstyle\s*=\s*["'][^"'<>]*\b(display\s*:\s*none|visibility\s*:\s*hidden|font-size\s*:\s*0|opacity\s*:\s*0)\b`), nil},
	{"encoded_blob", SeverityLow, need(""), re(`[a-z0-9+/]{120,}={0,2}`), nil},

	// Addressing the model directly, common in benign tools too.
	{"model_directive", SeverityLow, need("must|should|have to|need to|required"), re(`\b(you|the (assistant|model|ai|llm|agent))\s+(must|should|have to|need to|are required to)\b`), nil},
	{"tool_invocation", SeverityLow, need("call|invoke|execute|run|use"), re(`\b(call|invoke|execute|run|use)\s+(the\s+)?[` + "`" + `'"]?[a-z][a-z0-9]*[_.-][a-z0-9_.-]*[a-z0-9]`), nil},
}

// Scan checks a tool for signs of poisoning: instructions hidden in its
// description, title, schemas (every string and member name, so property
// descriptions, defaults, enums and parameter names count), annotations,
// icons (a data: URI's text or SVG), execution and _meta. Rules, by name:
//
//   - instruction_tag: <IMPORTANT>, <SYSTEM>, <instructions>, [SYSTEM]… (high)
//   - concealment: "do not tell the user", "silently send"… (high)
//   - instruction_override: "ignore previous instructions"… (high)
//   - secret_reference: ~/.ssh, id_rsa, mcp.json, .aws/credentials, a .env
//     file read or sent… (high); asking for keys, tokens, passwords
//     (medium); a .env file named (low)
//   - invisible_unicode: tag characters U+E0000–E007F and bidi controls
//     (high), zero-width characters and other format characters (medium),
//     soft hyphens (low)
//   - terminal_escape: ANSI escape sequences (high)
//   - control_character: other control characters than tab and newlines
//     (medium)
//   - tool_shadowing: "when send_message is invoked", "side effect on the
//     also present…", "send all emails to…" (medium)
//   - cross_server_reference: a mention of a tool of another upstream
//     (medium; see ScanOptions.ForeignTools)
//   - data_exfiltration: "pass its content as", "post … https://…" (medium)
//   - coercion: "VERY VERY important", "the application will crash" (medium)
//   - shell_command, hidden_markup (HTML and Markdown comments, elements
//     styled out of sight): (medium)
//   - long_description (low; see ScanOptions.MaxDescription)
//   - precondition: "before using this tool", "you must first"… (low)
//   - encoded_blob, model_directive ("you must"), tool_invocation
//     ("call read_file"): (low)
//
// Text is read as a model reads it (see normalize); base64 in it that
// decodes to text is scanned as well, at the field with "#base64"
// appended, and words joined by '_' or '-' into one identifier are read
// as words by the rules of high severity.
//
// Findings are sorted by severity, highest first; each rule is reported at
// most once per field.
func Scan(t Tool, opts ScanOptions) []Finding {
	s := scanner{opts: opts}
	s.tool(t)
	maxLen := opts.MaxDescription
	if maxLen == 0 {
		maxLen = DefaultMaxDescription
	}
	if n := utf8.RuneCountInString(t.Description); maxLen > 0 && n > maxLen {
		s.add("long_description", SeverityLow, at("/description"), fmt.Sprintf("%d characters, more than %d", n, maxLen))
	}
	slices.SortStableFunc(s.found, func(a, b Finding) int { return int(b.Severity - a.Severity) })
	return s.found
}

type scanner struct {
	opts ScanOptions
	// foreignOnly limits the scan to cross_server_reference.
	foreignOnly bool
	seen        map[[2]string]int // rule, field -> index in found
	found       []Finding
	perRule     map[ruleSeverity]int // findings of each rule and severity
	foreign     *foreignIndex        // of opts.ForeignTools, built on first use
	decoding    bool                 // scanning what base64 decoded to
	// image: reading an icon's src, a data: URI of an image type, SVG's
	// markup as editors write it: hidden_markup is not looked for (see
	// dataURI).
	image bool
}

func (s *scanner) tool(t Tool) {
	if !s.foreignOnly {
		// Names are identifiers that benign tools fill with verbs like
		// read and secrets, so only invisible characters count there.
		s.invisible(at("/name"), t.Name)
	}
	s.text(at("/title"), t.Title, false)
	s.text(at("/description"), t.Description, false)
	s.json("/inputSchema", t.InputSchema)
	s.json("/outputSchema", t.OutputSchema)
	s.json("/annotations", t.Annotations)
	// Passed on to the client with the rest, and shown to the model by
	// clients that hand it the whole tool: an icon's data: URI may be
	// text or SVG as well (see dataURI).
	s.json("/icons", t.Icons)
	s.json("/execution", t.Execution)
	s.json("/_meta", t.Meta)
	// Members MCP does not define ("x-notes", "examples") reach the
	// client as well: their strings are read as the description's.
	s.json("", t.Unknown)
}

// maxPerRule bounds the findings of one rule of one severity in one
// scan: the rule's severity is what blocks a tool, and each finding is an
// event, so a list whose every string trips a rule (hundreds of thousands
// in one answer) must not make as many findings, each naming where it
// is. Bounded by severity, low findings first cannot use up a rule's
// bound before its high one (TestAttackScanLowFindingsFirst).
const maxPerRule = 16

type ruleSeverity struct {
	rule string
	sev  Severity
}

func (s *scanner) add(rule string, sev Severity, f field, excerpt string) {
	k2 := ruleSeverity{rule, sev}
	if s.perRule[k2] >= maxPerRule {
		return
	}
	name := f.String()
	k := [2]string{rule, name}
	if i, ok := s.seen[k]; ok {
		// One finding a rule and field, the worst: a soft hyphen first
		// must not hide a bidi override after it.
		old := &s.found[i]
		if sev > old.Severity {
			s.perRule[ruleSeverity{rule, old.Severity}]--
			s.perRule[k2]++
			old.Severity, old.Excerpt = sev, excerpt
		}
		return
	}
	if s.seen == nil {
		s.seen = map[[2]string]int{}
	}
	if s.perRule == nil {
		s.perRule = map[ruleSeverity]int{}
	}
	s.seen[k] = len(s.found)
	s.perRule[k2]++
	s.found = append(s.found, Finding{Rule: rule, Severity: sev, Field: name, Excerpt: excerpt})
}

// field names where a text is: a path, or a string inside a JSON value
// at a path, whose JSON Pointer is worked out only when something is
// found there. Worked out for every string, as it was, a value's strings
// cost the depth and the length of the names above each: one 1 MiB member
// name over an array of 300,000 strings was 300 GB of pointers.
type field struct {
	path   string
	js     *jsonPath // the string being read at path, if any
	suffix string
}

func at(path string) field { return field{path: path} }

// Limits on a field's name as reported: past them a name is clipped ("…").
const (
	maxFieldName    = 512 // bytes of the whole name
	maxFieldSegment = 64  // bytes of one member name in it
)

func (f field) String() string {
	path := f.path
	if len(path) > maxFieldName {
		path = clip(path, maxFieldName)
	}
	if f.js == nil {
		return path + f.suffix
	}
	var b strings.Builder
	b.WriteString(path)
	d := f.js.dec
	for i := 1; i <= d.StackDepth(); i++ {
		if b.Len() >= maxFieldName {
			b.WriteString("…")
			break
		}
		b.WriteByte('/')
		kind, n := d.StackIndex(i)
		if kind == '[' {
			b.WriteString(strconv.FormatInt(n-1, 10))
			continue
		}
		b.WriteString(escapePointer(f.js.names[i-1]))
	}
	b.WriteString(f.suffix)
	return b.String()
}

// jsonPath follows the member names above the token a decoder read last.
type jsonPath struct {
	dec   *jsontext.Decoder
	names []string // by depth, clipped to maxFieldSegment
}

// json scans every string and member name of a JSON value.
func (s *scanner) json(base string, v jsontext.Value) {
	if len(v) == 0 {
		return
	}
	d := jsontext.NewDecoder(strings.NewReader(string(v)))
	js := &jsonPath{dec: d}
	for {
		tok, err := d.ReadToken()
		if err != nil {
			return // end of value; the value was validated when sealed
		}
		switch tok.Kind() {
		case '{', '[':
			js.names = append(js.names[:d.StackDepth()-1], "")
			continue
		case '"':
		default:
			continue
		}
		text := tok.String()
		kind, n := d.StackIndex(d.StackDepth())
		if kind == '{' && n%2 == 1 {
			// An object member's name: the pointer names the member.
			name := text
			if len(name) > maxFieldSegment {
				name = strings.Clone(clip(name, maxFieldSegment))
			}
			js.names[d.StackDepth()-1] = name
			s.text(field{path: base, js: js, suffix: "#name"}, text, true)
			continue
		}
		s.text(field{path: base, js: js}, text, false)
	}
}

// text runs every check on one string. ident marks a member name, whose
// words are joined by '_', '-' or camelCase rather than spaces.
func (s *scanner) text(field field, raw string, ident bool) {
	if raw == "" {
		return
	}
	if !ident && !s.decoding && len(raw) > len("data:") && strings.EqualFold(raw[:len("data:")], "data:") {
		defer func(was bool) { s.image = was }(s.image)
		s.image = iconSrc(field) && strings.HasPrefix(dataMediaType(raw), "image/")
		if s.dataURI(field, raw) {
			return
		}
	}
	norm := normalize(raw, ident)
	if !s.foreignOnly {
		s.invisible(field, raw)
		s.patterns(field, norm)
		if !ident {
			// DO_NOT_TELL_THE_USER reads as the words it joins; but
			// prose names tools so (figma_extract_tokens), so only the
			// rules of high severity, attacks whatever the words name,
			// read them so.
			if split := splitJoined(norm); split != norm {
				s.patternsOf(field, split, SeverityHigh)
			}
			s.encoded(field, raw)
		}
	}
	if s.foreign == nil && len(s.opts.ForeignTools) > 0 {
		s.foreign = newForeignIndex(s.opts.ForeignTools, nil)
	}
	if i, n := s.foreign.find(norm, false); i >= 0 {
		s.add("cross_server_reference", SeverityMedium, field, excerpt(norm, i, i+n))
	} else if s.foreign != nil && !ident {
		// sendEmail: its words split as the name's are.
		if split := camelSplit(raw); split != raw {
			split = normalize(split, false)
			if i, n := s.foreign.find(split, true); i >= 0 {
				s.add("cross_server_reference", SeverityMedium, field, excerpt(split, i, i+n))
			}
		}
	}
}

// camelSplit returns s with '_' between a lower-case letter or digit and
// the upper-case letter after it (send_Email for sendEmail), or s itself
// if it has none.
func camelSplit(s string) string {
	var b strings.Builder
	var prev rune
	for i, r := range s {
		if unicode.IsUpper(r) && (unicode.IsLower(prev) || unicode.IsDigit(prev)) {
			if b.Len() == 0 {
				b.Grow(len(s) + 8)
				b.WriteString(s[:i])
			}
			b.WriteByte('_')
		}
		if b.Len() > 0 {
			b.WriteRune(r)
		}
		prev = r
	}
	if b.Len() == 0 {
		return s
	}
	return b.String()
}

// joined finds words joined by '_' or '-', three or more of them.
var joined = regexp.MustCompile(`[a-z]+(?:[_-][a-z]+){2,}`)

// splitJoined returns norm with the '_' and '-' that join three or more
// words into one identifier turned into spaces, or norm itself if it has
// none.
func splitJoined(norm string) string {
	if !strings.ContainsAny(norm, "_-") {
		return norm
	}
	return joined.ReplaceAllStringFunc(norm, func(m string) string {
		return strings.Map(func(r rune) rune {
			if r == '_' || r == '-' {
				return ' '
			}
			return r
		}, m)
	})
}

// minEncoded is the shortest run of base64 characters (of either
// alphabet, standard or URL-safe) that may hide an instruction. Every run
// is decoded, and scanned if it is text: runs are disjoint, so the work
// is linear in the text, and a bound on their number would let decoys
// come first.
const minEncoded = 16

func isBase64Byte(c byte) bool {
	return c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '+' || c == '/' || c == '_' || c == '-'
}

// encoded scans, as text of its own at field#base64, what base64 in raw
// decodes to when that is text: a model decodes it when told to. Runs
// wrapped into lines (MIME, PEM: each but the last a multiple of 4 and
// at least minEncoded long, then white space, and '=' padding) are
// decoded as one text, as a model reads them (TestAttackScanWrappedBase64);
// failing that, each run on its own.
func (s *scanner) encoded(f field, raw string) {
	if s.decoding || len(raw) < minEncoded {
		return
	}
	type span struct{ i, j int }
	var group []span // runs wrapped into lines, one after another
	flush := func() {
		if len(group) > 1 {
			var b strings.Builder
			for _, r := range group {
				b.WriteString(raw[r.i:r.j])
			}
			if s.scanEncoded(f, b.String()) {
				group = group[:0]
				return
			}
		}
		for _, r := range group {
			s.scanEncoded(f, raw[r.i:r.j])
		}
		group = group[:0]
	}
	for i := 0; i < len(raw); {
		if !isBase64Byte(raw[i]) {
			i++
			continue
		}
		j := i + 1
		for j < len(raw) && isBase64Byte(raw[j]) {
			j++
		}
		// Wrapped on from the last run: that one a whole line, and only
		// white space between them.
		if n := len(group); n > 0 {
			last := group[n-1]
			if (last.j-last.i)%4 != 0 || last.j-last.i < minEncoded || strings.TrimSpace(raw[last.j:i]) != "" {
				flush()
			}
		}
		group = append(group, span{i, j})
		i = j
		for i < len(raw) && raw[i] == '=' {
			i++
		}
		if i > j {
			flush() // padding ends a text
		}
	}
	flush()
}

// dataURI scans raw, an RFC 2397 data: URI (an icon's src), for what
// its payload says, and reports whether that was all of raw to scan. A
// percent-encoded payload ("data:image/svg+xml,%3Csvg…") is scanned
// decoded, at field#data, unless it is a picture, and raw then as any
// text. A base64 payload is scanned decoded, at field#base64, when it is
// of a text type (text/*, SVG, XML, JSON, or none named) or no picture,
// and raw no further; a picture (a raster image: binary from its first
// bytes) is not scanned at all, only what comes before it: no rule reads
// a picture, and each would be an encoded_blob. Whatever reads as text
// is scanned, whatever type it claims: a payload typed image/png with a
// NUL after it is no picture (TestAttackPoisoningInRasterTypedIcon).
//
// In an icon's src of an image type (s.image) hidden_markup is not
// looked for: SVG's comments and layers styled display:none are what editors
// write (Illustrator, Inkscape), and an image's markup is not shown as
// text anyway; what a comment says is read by the other rules
// (TestScanSVGIconMarkupQuiet).
func (s *scanner) dataURI(f field, raw string) bool {
	head, payload, ok := strings.Cut(raw, ",")
	if !ok {
		return false
	}
	if !strings.HasSuffix(strings.ToLower(head), ";base64") {
		if text := percentDecode(payload); text != payload && !(s.image && picture(text)) {
			s.decoded(f, "#data", text)
		}
		return false
	}
	b, err := base64.RawStdEncoding.DecodeString(strings.TrimRight(strings.Map(dropSpace, payload), "="))
	if err != nil {
		return false // not base64: scanned as any text
	}
	s.text(f, head, false) // no comma: not read as a data: URI again
	mt := dataMediaType(raw)
	textual := mt == "" || strings.HasPrefix(mt, "text/") || strings.Contains(mt, "svg") || strings.Contains(mt, "xml") || strings.Contains(mt, "json")
	if textual || !picture(string(b[:min(len(b), pictureSniff)])) {
		s.decoded(f, "#base64", string(b))
	}
	return true
}

// iconSrc reports whether f is an icon's src (icons/N/src of a tool or
// listed item), the one place an image's markup is read as an image's
// (TestAttackImageTypedDescriptionHidesMarkup).
func iconSrc(f field) bool {
	if f.js == nil || f.js.dec.StackDepth() != 2 || !strings.EqualFold(f.js.names[1], "src") {
		return false
	}
	if kind, _ := f.js.dec.StackIndex(1); kind != '[' {
		return false
	}
	return strings.EqualFold(f.path[strings.LastIndexByte(f.path, '/')+1:], "icons")
}

// dataMediaType is the media type a data: URI names, in lower case
// without parameters: "" if none.
func dataMediaType(raw string) string {
	head, _, _ := strings.Cut(raw[len("data:"):], ",")
	mt, _, _ := strings.Cut(head, ";")
	return strings.ToLower(strings.TrimSpace(mt))
}

// pictureSniff is how much of a payload picture reads.
const pictureSniff = 3072

// picture reports whether b, a data: URI's payload decoded, is binary
// from its first bytes: fewer than 90 % of its first 512 characters
// printable (invalid UTF-8 is not), or empty. A PNG, JPEG or GIF is at
// once; text with a NUL or a control character in it is not.
func picture(b string) bool {
	b = b[:min(len(b), pictureSniff)]
	n, printable := 0, 0
	for i, r := range b {
		if r == utf8.RuneError && i+utf8.UTFMax > len(b) && !utf8.FullRuneInString(b[i:]) {
			break // a character cut at the end of what is read
		}
		n++
		if unicode.IsPrint(r) || r == '\n' || r == '\t' || r == '\r' {
			printable++
		}
		if n == 512 {
			break
		}
	}
	return printable*100 < n*90 || n == 0
}

// decoded scans text, what the string at f decodes to, at f with suffix.
func (s *scanner) decoded(f field, suffix, text string) {
	f.suffix += suffix
	s.decoding = true
	s.text(f, text, false)
	s.decoding = false
}

func dropSpace(r rune) rune {
	if unicode.IsSpace(r) {
		return -1
	}
	return r
}

// percentDecode decodes %XX escapes in s as a browser does a data: URI,
// leaving a '%' not followed by two hex digits as it is.
func percentDecode(s string) string {
	if strings.IndexByte(s, '%') < 0 {
		return s
	}
	b := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		if s[i] == '%' && i+2 < len(s) && isHex(s[i+1]) && isHex(s[i+2]) {
			b = append(b, unhex(s[i+1])<<4|unhex(s[i+2]))
			i += 2
			continue
		}
		b = append(b, s[i])
	}
	return string(b)
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

func unhex(c byte) byte {
	switch {
	case c >= 'a':
		return c - 'a' + 10
	case c >= 'A':
		return c - 'A' + 10
	}
	return c - '0'
}

// scanEncoded scans what run decodes to, if it is text, and reports
// whether it was.
func (s *scanner) scanEncoded(f field, run string) bool {
	if len(run) < minEncoded {
		return false
	}
	text, ok := decodeText(run)
	if !ok {
		return false
	}
	s.decoding = true
	at := f
	at.suffix += "#base64"
	s.text(at, text, false)
	s.decoding = false
	return true
}

// decodeText decodes b64 in whichever base64 alphabet it is written,
// padded or not, and reports whether it is text: valid UTF-8, printable,
// with a space between words.
func decodeText(b64 string) (string, bool) {
	enc := base64.RawStdEncoding
	if strings.ContainsAny(b64, "-_") {
		enc = base64.RawURLEncoding
	}
	b, err := enc.DecodeString(strings.TrimRight(b64, "="))
	if err != nil || !utf8.Valid(b) || !bytes.ContainsRune(b, ' ') {
		return "", false
	}
	for _, r := range string(b) {
		if !unicode.IsPrint(r) && r != '\n' && r != '\t' && r != '\r' {
			return "", false
		}
	}
	return string(b), true
}

// foreignIndex finds the first distinctive foreign tool name in a text
// with one map lookup per identifier in the text, not one search per
// name: behind a gateway with many upstreams there are thousands of names,
// and every tools/list of every upstream is scanned against them.
type foreignIndex struct {
	// byRun holds the lower-cased names by their first identifier run
	// ("create_issue" under itself, "foo-bar.baz" under "foo").
	byRun map[string][]string
	// odd names begin with a byte that is no identifier's: searched for
	// one by one.
	odd []string
	// own are the names, in lower case, of the upstream whose text is
	// searched: a mention spelt as one of them is of its own tool, even
	// where it is another upstream's in another spelling (get-lists and
	// get_lists).
	own map[string]bool
}

func isIdentByte(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

func newForeignIndex(names, own []string) *foreignIndex {
	x := &foreignIndex{byRun: map[string][]string{}}
	for _, name := range own {
		if x.own == nil {
			x.own = map[string]bool{}
		}
		x.own[strings.ToLower(name)] = true
	}
	for _, name := range names {
		if !distinctive(name) {
			continue
		}
		low := strings.ToLower(name)
		if !isIdentByte(low[0]) {
			x.odd = append(x.odd, low)
			continue
		}
		// send_email as a model reads it: send-email, send.email (find
		// folds '-' and '.' in the text), sendEmail (text splits
		// camelCase). Not sendemail: user_info, watch_list and check_out
		// joined so are words of their own (userinfo, watchlist,
		// checkout).
		snake := snakeName(name)
		spellings := []string{low, snake}
		slices.Sort(spellings)
		for _, sp := range slices.Compact(spellings) {
			j := 1
			for j < len(sp) && isIdentByte(sp[j]) {
				j++
			}
			x.byRun[sp[:j]] = append(x.byRun[sp[:j]], sp)
		}
	}
	return x
}

// snakeName is name in lower case with its words joined by '_': camelCase
// boundaries, '-' and '.' between letters or digits made '_'.
func snakeName(name string) string {
	var b strings.Builder
	for i := 0; i < len(name); i++ {
		c := name[i]
		switch {
		case c >= 'A' && c <= 'Z':
			if i > 0 && (name[i-1] >= 'a' && name[i-1] <= 'z' || name[i-1] >= '0' && name[i-1] <= '9') {
				b.WriteByte('_')
			}
			b.WriteByte(c + 'a' - 'A')
		case (c == '-' || c == '.') && joins(name, i):
			b.WriteByte('_')
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// joins reports whether s[i] stands between two letters or digits.
func joins(s string, i int) bool {
	alnum := func(c byte) bool { return isIdentByte(c) && c != '_' }
	return i > 0 && i+1 < len(s) && alnum(s[i-1]) && alnum(s[i+1])
}

// find returns where the first foreign name in s begins, as a word (not
// part of a longer identifier), and its length; -1 if none is there. A
// '-' or '.' joining words in s is taken as '_'. A mention spelt as one of
// the own names is passed over; camel says s had its camelCase split
// (camelSplit), and then one spelt so once joined again is too.
func (x *foreignIndex) find(s string, camel bool) (at, n int) {
	if x == nil {
		return -1, 0
	}
	t := s
	if strings.ContainsAny(s, "-.") {
		b := []byte(s)
		for i, c := range b {
			if (c == '-' || c == '.') && joins(s, i) {
				b[i] = '_'
			}
		}
		t = string(b)
	}
	// The next match of each search at or past off, found once each:
	// passing over own names, the work stays one pass over s.
	const unknown = -2
	nextS, nextT := unknown, unknown
	var lenS, lenT int
	odd := make([]int, len(x.odd))
	for i := range odd {
		odd[i] = unknown
	}
	for off := 0; off <= len(s); {
		if nextS != -1 && nextS < off {
			nextS, lenS = x.findRuns(s, off)
		}
		if t == s {
			nextT = -1
		} else if nextT != -1 && nextT < off {
			nextT, lenT = x.findRuns(t, off)
		}
		at, m := nextS, lenS
		if nextT >= 0 && (at < 0 || nextT < at) {
			at, m = nextT, lenT
		}
		for i, name := range x.odd {
			if odd[i] != -1 && odd[i] < off {
				odd[i] = indexWordFrom(s, name, off)
			}
			if odd[i] >= 0 && (at < 0 || odd[i] < at) {
				at, m = odd[i], len(name)
			}
		}
		if at < 0 {
			return -1, 0
		}
		if span := s[at : at+m]; x.own[span] || camel && x.own[strings.ReplaceAll(span, "_", "")] {
			off = at + m
			continue
		}
		// The name's length in s, whose spelling may differ from the
		// name's (send-email for send_email).
		n = at + 1
		for n < len(s) && (isIdentByte(s[n]) || (s[n] == '-' || s[n] == '.') && joins(s, n)) {
			n++
		}
		return at, max(n-at, m)
	}
	return -1, 0
}

// findRuns returns where the first name of byRun in t at or past off
// begins as a word, and the name's length; -1 if none is there.
func (x *foreignIndex) findRuns(t string, off int) (at, n int) {
	i := off
	for i > 0 && i < len(t) && isIdentByte(t[i-1]) && isIdentByte(t[i]) {
		i++ // inside a word: from its end
	}
	for i < len(t) {
		if !isIdentByte(t[i]) {
			i++
			continue
		}
		j := i + 1
		for j < len(t) && isIdentByte(t[j]) {
			j++
		}
		for _, name := range x.byRun[t[i:j]] {
			end := i + len(name)
			if strings.HasPrefix(t[i:], name) && (end == len(t) || !isIdentByte(t[end])) {
				return i, len(name)
			}
		}
		i = j
	}
	return -1, 0
}

// patterns runs the pattern rules over normalized text.
func (s *scanner) patterns(field field, norm string) { s.patternsOf(field, norm, SeverityLow) }

// patternsOf runs the pattern rules of severity min or above.
func (s *scanner) patternsOf(field field, norm string, min Severity) {
	for _, r := range rules {
		if r.severity < min || s.image && r.name == "hidden_markup" {
			continue
		}
		if r.need != nil && !slices.ContainsFunc(r.need, func(n string) bool { return strings.Contains(norm, n) }) {
			continue
		}
		if r.skip == nil {
			if loc := r.re.FindStringIndex(norm); loc != nil {
				s.add(r.name, r.severity, field, excerpt(norm, loc[0], loc[1]))
			}
			continue
		}
		// Every match, until one the rule's skip keeps: a bound on them
		// would let decoys (a public key, a negated statement) come
		// first. Each search starts past the last match, so the work is
		// one pass over the text, and in no word (where the text before
		// it would have kept a \b from matching).
		for off := 0; off < len(norm); {
			for off > 0 && off < len(norm) && isIdentByte(norm[off-1]) && isIdentByte(norm[off]) {
				off++
			}
			loc := r.re.FindStringIndex(norm[off:])
			if loc == nil {
				break
			}
			lo, hi := off+loc[0], off+loc[1]
			if !r.skip(norm[lo:hi]) {
				s.add(r.name, r.severity, field, excerpt(norm, lo, hi))
				break
			}
			off = max(hi, lo+1)
		}
	}
}

// invisible reports characters that a person reading the text does not
// see but a model does.
func (s *scanner) invisible(field field, raw string) {
	var tags strings.Builder
	for i, r := range raw {
		switch {
		case r >= 0xE0000 && r <= 0xE007F:
			if r >= 0xE0020 && r <= 0xE007E {
				tags.WriteRune(r - 0xE0000)
			}
		case r >= 0x202A && r <= 0x202E, r >= 0x2066 && r <= 0x2069:
			s.add("invisible_unicode", SeverityHigh, field, fmt.Sprintf("bidi control %s", visible(string(r))))
		case r == 0x1B:
			s.add("terminal_escape", SeverityHigh, field, excerpt(raw, i, i+1))
		case r == 0x200D && zwjInEmoji(raw, i):
			// Joins an emoji sequence (👨‍👩‍👧); that is what it is for.
		case (r == 0x200C || r == 0x200D) && joinerInScript(raw, i):
			// Spelling in Arabic and Indic scripts (Persian می‌کند, a
			// Malayalam chillu): it splits no ASCII word.
		case r == 0x2800 && nextToBraille(raw, i):
			// The blank cell of Braille text: the space between its words.
		case r >= 0xE0100 && r <= 0xE01EF, r >= 0x200B && r <= 0x200F, r >= 0x2060 && r <= 0x2064,
			r == 0xFEFF, r == 0x180E, r == 0x061C, r == 0x115F, r == 0x1160, r == 0x3164, r == 0xFFA0,
			r == 0x2800, r == 0x034F:
			s.add("invisible_unicode", SeverityMedium, field, excerpt(raw, i, i+utf8.RuneLen(r)))
		case r == 0x00AD:
			s.add("invisible_unicode", SeverityLow, field, "soft hyphen")
		case unicode.Is(unicode.Cf, r):
			s.add("invisible_unicode", SeverityMedium, field, excerpt(raw, i, i+utf8.RuneLen(r)))
		case unicode.IsControl(r) && r != '\n' && r != '\r' && r != '\t':
			s.add("control_character", SeverityMedium, field, excerpt(raw, i, i+utf8.RuneLen(r)))
		}
	}
	if tags.Len() > 0 {
		s.add("invisible_unicode", SeverityHigh, field, "hidden tag text: "+clip(tags.String(), 200))
		// The hidden text is what the model reads: check it as well.
		tagged := field
		tagged.suffix += "#tags"
		s.text(tagged, tags.String(), false)
	}
}

// zwjInEmoji reports whether the zero-width joiner at byte i of s sits
// between two pictographic characters.
func zwjInEmoji(s string, i int) bool {
	prev, _ := utf8.DecodeLastRuneInString(s[:i])
	if prev == 0xFE0F {
		prev, _ = utf8.DecodeLastRuneInString(strings.TrimSuffix(s[:i], "\uFE0F"))
	}
	next, _ := utf8.DecodeRuneInString(s[i+3:])
	pict := func(r rune) bool { return r >= 0x1F000 || r >= 0x2600 && r <= 0x27BF || r == 0x2640 || r == 0x2642 }
	return pict(prev) && pict(next)
}

// joinerInScript reports whether the zero-width joiner or non-joiner at
// byte i of s (three bytes) follows a letter or mark of a script that
// writes them, Arabic or Indic, and comes before no ASCII letter.
func joinerInScript(s string, i int) bool {
	prev, _ := utf8.DecodeLastRuneInString(s[:i])
	next, _ := utf8.DecodeRuneInString(s[i+3:])
	script := prev >= 0x0600 && prev <= 0x08FF || prev >= 0x0900 && prev <= 0x0DFF ||
		prev >= 0xFB50 && prev <= 0xFDFF || prev >= 0xFE70 && prev <= 0xFEFE
	ascii := next < utf8.RuneSelf && unicode.IsLetter(next)
	return script && (unicode.IsLetter(prev) || unicode.IsMark(prev)) && !ascii
}

// nextToBraille reports whether the rune at byte i of s (U+2800, three
// bytes) stands next to a Braille cell that is not blank.
func nextToBraille(s string, i int) bool {
	prev, _ := utf8.DecodeLastRuneInString(s[:i])
	next, _ := utf8.DecodeRuneInString(s[i+3:])
	cell := func(r rune) bool { return r > 0x2800 && r <= 0x28FF }
	return cell(prev) || cell(next)
}

// normalize prepares text for the rules: HTML character references
// decoded (&lt;IMPORTANT&gt;), compatibility forms folded (NFKC: a model
// reads "＜ＩＭＰＯＲＴＡＮＴ＞", "𝐈𝐌𝐏𝐎𝐑𝐓𝐀𝐍𝐓" and "﹤SYSTEM﹥" as the ASCII they
// stand for), letters and brackets that look like ASCII ones folded to
// them (fold: Cyrillic о, Greek Ο, ï, ❮), combining marks on ASCII
// letters dropped, lower case, invisible and format characters removed,
// blanks and whitespace runs collapsed to one space. A member name also
// has its '_', '-' and camelCase boundaries turned into spaces.
func normalize(raw string, ident bool) string {
	if strings.IndexByte(raw, '&') >= 0 {
		raw = html.UnescapeString(raw)
	}
	raw = nfkc(raw)
	var b strings.Builder
	b.Grow(len(raw))
	space := false
	ascii := false // the last rune written was ASCII
	var prev rune
	for _, r := range raw {
		if unicode.Is(unicode.Cf, r) || r >= 0xE0000 && r <= 0xE01EF {
			continue
		}
		if r >= utf8.RuneSelf {
			if ascii && (unicode.Is(unicode.Mn, r) || unicode.Is(unicode.Me, r)) {
				continue // ï spelt i and U+0308, the joiner U+034F
			}
			if f, ok := fold[r]; ok {
				r = f
			} else if blank(r) {
				r = ' '
			}
		}
		if ident {
			if r == '_' || r == '-' {
				r = ' '
			} else if unicode.IsUpper(r) && unicode.IsLower(prev) {
				b.WriteByte(' ')
			}
		}
		prev = r
		if unicode.IsSpace(r) {
			space = true
			continue
		}
		if space && b.Len() > 0 {
			b.WriteByte(' ')
		}
		space = false
		r = unicode.ToLower(r)
		ascii = r < utf8.RuneSelf
		b.WriteRune(r)
	}
	return b.String()
}

// blank reports characters that show as a blank but are not white space
// to unicode.IsSpace: the braille blank and the Hangul fillers.
func blank(r rune) bool {
	return r == 0x2800 || r == 0x115F || r == 0x1160 || r == 0x3164 || r == 0xFFA0
}

// lookalikes are characters that NFKC leaves alone and a model reads as
// the ASCII character they look like: letters of other scripts (Cyrillic,
// Greek, Armenian), Latin small capitals and dotless letters, and angle
// brackets of other blocks. Guillemets (« », ‹ ›) are quotation marks in
// French and Russian text and are left alone.
var lookalikes = map[rune]rune{
	// Cyrillic.
	'А': 'A', 'В': 'B', 'С': 'C', 'Е': 'E', 'Н': 'H', 'І': 'I', 'Ј': 'J', 'К': 'K', 'М': 'M', 'О': 'O',
	'Р': 'P', 'Ѕ': 'S', 'Т': 'T', 'Х': 'X', 'У': 'Y', 'Ү': 'Y', 'Ԁ': 'D', 'Ԛ': 'Q', 'Ԝ': 'W', 'Ӏ': 'I',
	'а': 'a', 'е': 'e', 'о': 'o', 'р': 'p', 'с': 'c', 'у': 'y', 'х': 'x', 'ѕ': 's', 'і': 'i', 'ј': 'j',
	'һ': 'h', 'ԁ': 'd', 'ԛ': 'q', 'ԝ': 'w', 'ӏ': 'l', 'ү': 'y', 'ѵ': 'v',
	// Greek.
	'Α': 'A', 'Β': 'B', 'Ε': 'E', 'Ζ': 'Z', 'Η': 'H', 'Ι': 'I', 'Κ': 'K', 'Μ': 'M', 'Ν': 'N', 'Ο': 'O',
	'Ρ': 'P', 'Τ': 'T', 'Υ': 'Y', 'Χ': 'X',
	'α': 'a', 'ι': 'i', 'κ': 'k', 'ν': 'v', 'ο': 'o', 'ρ': 'p', 'υ': 'u', 'χ': 'x',
	// Armenian.
	'օ': 'o', 'ս': 'u', 'հ': 'h', 'ո': 'n',
	// Latin small capitals and dotless letters.
	'ᴀ': 'a', 'ʙ': 'b', 'ᴄ': 'c', 'ᴅ': 'd', 'ᴇ': 'e', 'ɢ': 'g', 'ʜ': 'h', 'ɪ': 'i', 'ᴊ': 'j', 'ᴋ': 'k',
	'ʟ': 'l', 'ᴍ': 'm', 'ɴ': 'n', 'ᴏ': 'o', 'ᴘ': 'p', 'ʀ': 'r', 'ꜱ': 's', 'ᴛ': 't', 'ᴜ': 'u', 'ᴠ': 'v',
	'ᴡ': 'w', 'ʏ': 'y', 'ᴢ': 'z', 'ı': 'i', 'ȷ': 'j', 'ɑ': 'a', 'ɡ': 'g',
	// Angle brackets (〈 〉 are also what NFKC makes of U+2329, U+232A).
	'❬': '<', '❭': '>', '❮': '<', '❯': '>', '❰': '<', '❱': '>', '⟨': '<', '⟩': '>', '〈': '<', '〉': '>',
	'˂': '<', '˃': '>', 'ᐸ': '<', 'ᐳ': '>', '⧼': '<', '⧽': '>',
}

// fold maps each character normalize folds to the ASCII one a model reads
// it as: the lookalikes, and letters of the Latin, Greek and Cyrillic
// blocks that are an ASCII letter or a lookalike with combining marks
// (Í, ї, ό), which NFKC composes.
var fold = func() map[rune]rune {
	m := maps.Clone(lookalikes)
	for _, span := range [][2]rune{{0xC0, 0x24F}, {0x370, 0x52F}, {0x1E00, 0x1FFF}} {
		for r := span[0]; r <= span[1]; r++ {
			d := []rune(norm.NFD.String(string(r)))
			if len(d) < 2 || !slices.ContainsFunc(d[1:], func(c rune) bool { return unicode.Is(unicode.Mn, c) }) {
				continue
			}
			base := d[0]
			if f, ok := lookalikes[base]; ok {
				base = f
			}
			if base < utf8.RuneSelf && unicode.IsLetter(base) {
				m[r] = base
			}
		}
	}
	return m
}()

// nfkc returns s in Unicode normalization form KC. It does not allocate
// for ASCII text, or other text already in NFKC.
func nfkc(s string) string {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			if norm.NFKC.QuickSpanString(s) == len(s) {
				return s
			}
			return norm.NFKC.String(s)
		}
	}
	return s
}

// excerpt returns s[i:j] with up to 40 bytes of context either side.
func excerpt(s string, i, j int) string {
	lo, hi := max(0, i-40), min(len(s), j+40)
	for lo > 0 && !utf8.RuneStart(s[lo]) {
		lo--
	}
	for hi < len(s) && !utf8.RuneStart(s[hi]) {
		hi++
	}
	out := strings.TrimSpace(visible(s[lo:hi]))
	if lo > 0 {
		out = "…" + out
	}
	if hi < len(s) {
		out += "…"
	}
	return clip(out, 300)
}

// visible writes invisible and control characters as \u{XXXX} and
// collapses whitespace.
func visible(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r == '\n' || r == '\r' || r == '\t':
			b.WriteByte(' ')
		case unicode.Is(unicode.Cf, r), unicode.IsControl(r), r >= 0xE0000 && r <= 0xE01EF,
			r == 0x115F, r == 0x1160, r == 0x3164, r == 0xFFA0, r == 0x2800, r == 0x034F:
			fmt.Fprintf(&b, `\u{%04X}`, r)
		default:
			b.WriteRune(r)
		}
	}
	// Collapse whitespace runs, keeping a single space at either end.
	var out strings.Builder
	space := false
	for _, r := range b.String() {
		if unicode.IsSpace(r) {
			space = true
			continue
		}
		if space {
			out.WriteByte(' ')
			space = false
		}
		out.WriteRune(r)
	}
	if space {
		out.WriteByte(' ')
	}
	return out.String()
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

// distinctive reports whether a tool name is unlikely to occur in prose
// by accident: "send_message" is, "search" is not.
func distinctive(name string) bool {
	if len(name) < 5 {
		return false
	}
	if strings.ContainsAny(name, "_-.") {
		return true
	}
	for i := 1; i < len(name); i++ {
		if name[i-1] >= 'a' && name[i-1] <= 'z' && name[i] >= 'A' && name[i] <= 'Z' {
			return true
		}
	}
	return false
}

// indexWord finds word in s where it is not part of a longer identifier.
func indexWord(s, word string) int { return indexWordFrom(s, word, 0) }

// indexWordFrom is indexWord at or past byte off of s.
func indexWordFrom(s, word string, off int) int {
	isIdent := func(c byte) bool {
		return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
	}
	for {
		i := strings.Index(s[off:], word)
		if i < 0 {
			return -1
		}
		i += off
		end := i + len(word)
		if (i == 0 || !isIdent(s[i-1])) && (end == len(s) || !isIdent(s[end])) {
			return i
		}
		off = i + 1
	}
}
