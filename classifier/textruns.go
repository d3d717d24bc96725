package classifier

import (
	"encoding/base64"
	"slices"
	"strings"
	"unicode/utf8"
)

// A client hands its model a message's text blocks one after another: a
// tool result's content, a resource's contents, a sampling request's or
// a prompt's messages (and the system prompt before them), an A2A
// message's or artifact's parts. An upstream that cuts its injection
// into blocks of a few characters each ("Ign", "ore all prev", ...) has
// no block say anything, while the model reads the whole. So
// DetectInjectionInResult reads each such run of blocks also joined, as
// a model is given it: with nothing between the blocks (an LLM API given
// adjacent text blocks reads them side by side, and hosts that
// concatenate do too), and, where two blocks meet with no space, with a
// space for the line break other hosts put between them (a space, not a
// line break, so that a rule reading one line, such as the
// exfiltration rule's, reads across the edge as the model does). Only
// blocks of one message or list of messages are joined: strings of
// other members (structuredContent, an elicitation's form, another
// result of a batch) are not, no model reading them as one text.
//
// A blob (base64) is decoded as clients decode it, skipping line breaks
// and padding, and read whole, as a block of its run, when its mimeType
// is text's (text/*, JSON, XML, ...) or it is mostly printable: the
// encoded-payload rule reads only its first 8 KiB, in unbroken lines.

// textRuns gathers the runs of text blocks of a value as it is walked.
type textRuns struct {
	runs  []textRun
	at    map[int]int    // the index in runs of the run whose value starts at an offset
	mimes map[int]string // the mimeType of each object with one, by where it starts
	blobs []pendingBlob
}

type textRun struct {
	name   string
	system string   // the system prompt, read first
	blocks []string // the blocks' text, in order
}

// pendingBlob is a blob, at path in the object starting at obj, whose
// mimeType may come after it: it is read, and its block (blocks[block] of
// runs[run]) filled, once the walk is done.
type pendingBlob struct {
	path, raw       string
	obj, run, block int
}

// note takes ev, a string of the walk at w, if it is a block's text (or
// blob) or a system prompt, or a mimeType.
func (r *textRuns) note(w *jsonWalker, ev walkEvent) {
	if ev.key != "text" && ev.key != "blob" && ev.key != "systemPrompt" && ev.key != "mimeType" {
		return
	}
	st := w.stack
	if len(st) == 0 || st[len(st)-1].array {
		return
	}
	obj := st[len(st)-1].start
	if ev.key == "mimeType" {
		if r.mimes == nil {
			r.mimes = map[int]string{}
		}
		r.mimes[obj] = ev.str
		return
	}
	at, named, ok := runAt(st, ev.key)
	if !ok {
		return
	}
	i, seen := r.at[at]
	if !seen {
		if r.at == nil {
			r.at = map[int]int{}
		}
		i = len(r.runs)
		r.at[at] = i
		r.runs = append(r.runs, textRun{name: stackPath(named)})
	}
	t := &r.runs[i]
	switch ev.key {
	case "systemPrompt":
		t.system = ev.str
	case "blob":
		r.blobs = append(r.blobs, pendingBlob{path: w.path(), raw: ev.str, obj: obj, run: i, block: len(t.blocks)})
		t.blocks = append(t.blocks, "")
	default:
		t.blocks = append(t.blocks, ev.str)
	}
}

// detect returns out, the findings of the walk, with those of the
// blobs and of each run read joined: a kind found in a run joined that
// out has not is added, its path the run's and " (joined)".
func (r *textRuns) detect(out []InjectionFinding) []InjectionFinding {
	for _, b := range r.blobs {
		text, ok := decodeBlob(b.raw, textMIME(r.mimes[b.obj]))
		if !ok {
			continue
		}
		r.runs[b.run].blocks[b.block] = text
		out = addKinds(out, appendAt(nil, detectWhole(text), b.path))
	}
	for _, t := range r.runs {
		blocks := t.blocks
		if t.system != "" {
			blocks = append([]string{t.system}, blocks...)
		}
		if len(blocks) < 2 {
			continue
		}
		out = addKinds(out, appendAt(nil, detectWhole(strings.Join(blocks, "")), t.name+" (joined)"))
		if glued(blocks) {
			out = addKinds(out, appendAt(nil, detectWhole(strings.Join(blocks, " ")), t.name+" (joined)"))
		}
	}
	return out
}

// textMIME reports whether a resource of MIME type mime is text a
// client shows as such: text/*, JSON, XML, YAML, JavaScript.
func textMIME(mime string) bool {
	mime, _, _ = strings.Cut(strings.ToLower(strings.TrimSpace(mime)), ";")
	mime = strings.TrimSpace(mime)
	if strings.HasPrefix(mime, "text/") || strings.HasSuffix(mime, "+json") || strings.HasSuffix(mime, "+xml") {
		return true
	}
	switch mime {
	case "application/json", "application/xml", "application/yaml", "application/x-yaml", "application/javascript", "application/ecmascript", "application/x-sh":
		return true
	}
	return false
}

// addKinds appends to out each of fs of a kind out does not have.
func addKinds(out, fs []InjectionFinding) []InjectionFinding {
	for _, f := range fs {
		if !slices.ContainsFunc(out, func(g InjectionFinding) bool { return g.Kind == f.Kind }) {
			out = append(out, f)
		}
	}
	return out
}

// glued reports whether two of blocks meet with no space between them:
// joined with nothing, their words run together where a client that
// puts a line break there shows two.
func glued(blocks []string) bool {
	for i := 1; i < len(blocks); i++ {
		a, b := blocks[i-1], blocks[i]
		if a == "" || b == "" {
			continue
		}
		last, _ := utf8.DecodeLastRuneInString(a)
		first, _ := utf8.DecodeRuneInString(b)
		if !isSpace(last) && !isSpace(first) {
			return true
		}
	}
	return false
}

func isSpace(r rune) bool { return r == ' ' || r == '\n' || r == '\t' || r == '\r' }

// runAt returns the run the string of member key of the object at the
// top of st is of, by where its value starts, and the stack whose path
// names it: the list of messages the string is in (a sampling request's,
// a prompt's; the system prompt of the object holding them is read
// first), or else the content (a tool result's) or contents (a
// resource's) or parts (an A2A message's or artifact's) array it is a
// block of, as the block's text or blob, or its embedded resource's. ok is false for a string of no run.
func runAt(st []walkFrame, key string) (at int, named []walkFrame, ok bool) {
	n := len(st)
	if key == "systemPrompt" {
		return st[n-1].start, withKey(st, "messages"), true
	}
	j := n - 1 // the block
	if j >= 1 && !st[j-1].array && st[j-1].key == "resource" {
		j--
	}
	if j < 1 {
		return 0, nil, false
	}
	parent := st[j-1]
	switch {
	case parent.array && (parent.key == "content" || parent.key == "contents" || parent.key == "parts"):
	case !parent.array && parent.key == "content":
	default:
		return 0, nil, false
	}
	for k := j - 1; k >= 1; k-- {
		if st[k].array && st[k].key == "messages" && !st[k-1].array {
			return st[k-1].start, st[:k], true
		}
	}
	if !parent.array {
		return 0, nil, false // one block alone
	}
	return parent.start, st[:j-1], true
}

// withKey is st with the member of the object at its top named key, for
// its path.
func withKey(st []walkFrame, key string) []walkFrame {
	named := slices.Clone(st)
	named[len(named)-1].key = key
	return named
}

// decodeBlob returns s, a blob's base64, decoded, and whether it is text
// to read: always when text says its MIME type is text's (as
// UTF-8, what is not valid UTF-8 read as U+FFFD, as a client's decoder
// does), else when it is mostly printable (mostlyText), told from its
// first 3 KiB without decoding the rest of a binary (an image). It
// decodes as clients do, skipping what is not of the alphabet (line
// breaks, padding) and taking either alphabet. It decodes 4 KiB of base64
// at a time into the one string it returns, allocating little more than
// the decoded size (TestBlobDecodeAllocatesOnce).
func decodeBlob(s string, text bool) (string, bool) {
	enc := base64.RawStdEncoding
	var in [4096]byte
	var dec [3072]byte
	var out strings.Builder
	for i, first := 0, true; ; first = false {
		n := 0
		for ; i < len(s) && n < len(in); i++ {
			switch c := s[i]; {
			case c == '-':
				in[n] = '+'
				n++
			case c == '_':
				in[n] = '/'
				n++
			case base64Bytes[c]:
				in[n] = c
				n++
			}
		}
		last := n < len(in) // s ended: a full chunk reads on
		if last && n%4 == 1 {
			n--
		}
		m, err := enc.Decode(dec[:], in[:n])
		if err != nil {
			return "", false
		}
		if first {
			if !text && !mostlyText(validPrefix(string(dec[:m]))) {
				return "", false
			}
			out.Grow(enc.DecodedLen(len(s)))
		}
		out.Write(dec[:m])
		if last {
			break
		}
	}
	if t := out.String(); !utf8.ValidString(t) {
		return strings.ToValidUTF8(t, "\uFFFD"), true
	}
	return out.String(), true
}

// validPrefix is s up to where a rune cut at its end starts.
func validPrefix(s string) string {
	for i := len(s) - 1; i >= 0 && i >= len(s)-utf8.UTFMax; i-- {
		if utf8.RuneStart(s[i]) {
			if !utf8.FullRuneInString(s[i:]) {
				return s[:i]
			}
			break
		}
	}
	return s
}
