package telemetry

import (
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Bounds of what is recorded of a string a client chose. A tool name is
// the agent's to choose and may be as long as a request body (MiBs); a
// call to a made-up tool is denied and recorded, and events that held
// such names whole filled what the console reads of the store (32 MiB)
// with a few calls. MCP's naming guidance (specification 2025-11-25,
// SEP-986) keeps tool names to ASCII and at most 128 characters, and
// gateways' server names to 64, so no legitimate name comes near
// MaxRecordedName.
const (
	// MaxRecordedName bounds an identifier recorded in an event's top-level
	// fields (agent, session, upstream, tool), the evidence's tool name and
	// a span's names and attributes (gen_ai.tool.name, gen_ai.prompt.name,
	// mcp.resource.uri, ...).
	MaxRecordedName = 1 << 10
	// MaxRecordedText bounds every other string attribute of an event,
	// such as a public_reason that quotes the tool name.
	MaxRecordedText = 4 << 10
)

// CutMark is what a bounded string holds after its kept prefix:
// "…[cut: {bytes} bytes, sha256:{hex}]", the length and SHA-256 of the
// whole string as received, by which the full name can be recognised.
const CutMark = "…[cut: "

// Bound returns s if it is at most max bytes long; otherwise its longest
// prefix (whole UTF-8 sequences) that leaves room for the marker, then
// "…[cut: N bytes, sha256:HEX]" with N and HEX of the whole of s. The
// result is at most max bytes (max at least 128), and bounding it again
// changes nothing. Only the record is bounded: decisions are made on s.
func Bound(s string, max int) string {
	if len(s) <= max {
		return s
	}
	sum := sha256.Sum256([]byte(s))
	mark := make([]byte, 0, 128)
	mark = append(mark, CutMark...)
	mark = strconv.AppendInt(mark, int64(len(s)), 10)
	mark = append(mark, " bytes, sha256:"...)
	mark = hex.AppendEncode(mark, sum[:])
	mark = append(mark, ']')
	n := max - len(mark)
	if n < 0 {
		n = 0
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + string(mark)
}

// BoundName is Bound(s, MaxRecordedName).
func BoundName(s string) string { return Bound(s, MaxRecordedName) }

// ReadPrefix starts the action name of a resources/read: "resource:"
// and the URI read (intercept.ResourcePrefix).
const ReadPrefix = "resource:"

// ToolName is what is recorded (in events and log lines) of an action
// named name: [BoundName] of it, and for a read ([ReadPrefix]) [Scrub]
// of it first. A URI carries credentials as readily as arguments do
// (https://user:pass@host/, ?sig=, ?api_key=), and the record keeps
// arguments only redacted; spans scrub mcp.resource.uri the same way.
// A URI's userinfo is left out (withoutUserinfo), as policy's normal
// form of a read leaves it out.
// Of a read longer than [MaxRecordedName] only the kept prefix is
// scrubbed; the cut mark still names the whole as received.
func ToolName(name string) string {
	if !strings.HasPrefix(name, ReadPrefix) {
		return BoundName(name)
	}
	name = withoutUserinfo(name)
	b := BoundName(name)
	if len(b) == len(name) { // not cut
		return BoundName(Scrub(name))
	}
	i := strings.LastIndex(b, CutMark)
	kept, mark := Scrub(b[:i]), b[i:]
	n := MaxRecordedName - len(mark)
	if len(kept) > n { // a redaction longer than what it replaced
		for n > 0 && !utf8.RuneStart(kept[n]) {
			n--
		}
		kept = kept[:n]
	}
	return kept + mark
}

// withoutUserinfo is read, a read's name, without the userinfo of its
// URI (user:password@): left in scrubbed, as user:[REDACTED]@, it would
// no longer parse, and replay would not put the name in the normal form
// the policy decided on, which leaves userinfo out.
func withoutUserinfo(read string) string {
	i := strings.Index(read, "://")
	if i < 0 {
		return read
	}
	rest := read[i+3:]
	end := strings.IndexAny(rest, "/?#")
	if end < 0 {
		end = len(rest)
	}
	at := strings.LastIndexByte(rest[:end], '@')
	if at < 0 {
		return read
	}
	return read[:i+3] + rest[at+1:]
}

// BoundNames bounds e's top-level identifiers with [BoundName], and
// records its tool name as [ToolName]: the audit store calls it on every
// event it is given.
func (e *Event) BoundNames() {
	e.Agent = BoundName(e.Agent)
	e.Session = BoundName(e.Session)
	e.Upstream = BoundName(e.Upstream)
	e.Tool = ToolName(e.Tool)
	e.TxnID = BoundName(e.TxnID)
	e.Decision = BoundName(e.Decision)
	e.Reason = BoundName(e.Reason)
}
