// Package intercept is Sluice's single decision point: it decodes every
// JSON-RPC message exactly once, strictly, turns each tools/call into an
// [ActionDescriptor], asks a [Decider] what to do with it, and renders
// denials the way RFC-0002 prescribes.
//
// Transports in package gateway call [Decode] on every message a client
// sends and never forward bytes that were not decoded here, so what policy
// saw is exactly what the upstream receives:
//
//	msgs, batch, err := intercept.Decode(body)
//	if err != nil {
//		return intercept.ErrorResponse(nil, err) // -32700 / -32600, never forwarded
//	}
package intercept

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"unicode"

	"github.com/go-json-experiment/json/jsontext"
)

// Kind tells the four JSON-RPC message shapes apart.
type Kind uint8

const (
	// KindRequest has a method and an id.
	KindRequest Kind = iota + 1
	// KindNotification has a method and no id.
	KindNotification
	// KindResponse has an id and a result.
	KindResponse
	// KindError has an id (possibly null) and an error.
	KindError
)

func (k Kind) String() string {
	switch k {
	case KindRequest:
		return "request"
	case KindNotification:
		return "notification"
	case KindResponse:
		return "response"
	case KindError:
		return "error"
	}
	return "unknown"
}

// Message is one decoded JSON-RPC 2.0 message. Raw holds the exact bytes the
// message was decoded from; the other fields are views into it. A Message is
// immutable after Decode and safe for concurrent reads.
type Message struct {
	Kind   Kind
	Raw    jsontext.Value
	ID     jsontext.Value // nil for notifications
	Method string         // empty for responses
	Params jsontext.Value // nil when absent
	Result jsontext.Value // responses only
	Error  jsontext.Value // errors only

	// Name is params.name for tools/call and prompts/get and params.uri for
	// resources/read, the value the Mcp-Name header must agree with.
	Name string
	// Arguments is params.arguments of a tools/call, nil when absent.
	Arguments jsontext.Value
	// Meta is params._meta, nil when absent.
	Meta jsontext.Value
	// meta is what Meta says that every request is asked (MetaVersion,
	// CallExtra), read by Decode in one walk of it; metaRead: it was.
	meta     metaFacts
	metaRead bool

	idKey string // the id as IDKey gives it, when it differs from ID
	// extra: Raw has a top-level member JSON-RPC does not define.
	extra bool
	// readExtra: the params of a resources/read or prompts/get have a
	// member the method does not define (listed.go).
	readExtra bool
	// paramsExtra: params has a member beside name, uri, arguments, _meta
	// and requestState (CallExtra).
	paramsExtra bool
}

// IsCall reports whether m is a tools/call request.
func (m *Message) IsCall() bool { return m.Kind == KindRequest && m.Method == "tools/call" }

// Prefixes of the action names of reads (see [ActionName]).
const (
	ResourcePrefix = "resource:"
	PromptPrefix   = "prompt:"
)

// decidedMethod reports whether policy decides about requests of method:
// tools/call, and the reads resources/read and prompts/get.
func decidedMethod(method string) bool {
	return method == "tools/call" || method == "resources/read" || method == "prompts/get"
}

// ActionMethod reports whether requests of method are actions the Decider
// decides about (tools/call, resources/read, prompts/get): whose results,
// read by the model alike, OnResult is given.
func ActionMethod(method string) bool { return decidedMethod(method) }

// IsAction reports whether m is a request the Decider decides about:
// tools/call, resources/read or prompts/get.
func (m *Message) IsAction() bool { return m.Kind == KindRequest && decidedMethod(m.Method) }

// ActionName is the name a Decider sees for m: a tool's name, or
// resource:URI for resources/read and prompt:NAME for prompts/get, so that
// reads and tools never share a name.
func (m *Message) ActionName() string {
	switch m.Method {
	case "resources/read":
		return ResourcePrefix + m.Name
	case "prompts/get":
		return PromptPrefix + m.Name
	}
	return m.Name
}

// IDKey returns the request id as a comparable key ("" for notifications).
// Numbers and strings never collide: string ids keep their quotes. A
// string id is keyed by its value, not its spelling: a peer answers
// "a\u0062" with "ab", and Go's encoding/json answers "<a>" with
// "\u003ca\u003e" (a number id has one spelling: see [Decode]).
func (m *Message) IDKey() string {
	if m.idKey != "" {
		return m.idKey
	}
	return string(m.ID)
}

// IDKeyOf returns the key [Message.IDKey] gives a request whose id is v,
// a value of a message [Decode] accepted (the requestId a cancellation
// names).
func IDKeyOf(v jsontext.Value) string {
	if v.Kind() == '"' && bytes.IndexByte(v, '\\') >= 0 {
		key, _ := jsontext.AppendQuote(nil, unquote(v))
		return string(key)
	}
	return string(v)
}

// JSON-RPC 2.0 error codes used by Sluice.
const (
	CodeParseError     = -32700
	CodeInvalidRequest = -32600
	CodeMethodNotFound = -32601
	CodeInvalidParams  = -32602
	CodeInternalError  = -32603
	// CodeHeaderMismatch is MCP 2026-07-28's code for Mcp-Method / Mcp-Name
	// headers that disagree with the body (SEP-2243).
	CodeHeaderMismatch = -32020
	// CodeUpstreamError is Sluice's code for an upstream that cannot be
	// reached or died while a request was pending.
	CodeUpstreamError = -32003
	// CodeLimitExceeded is Sluice's code for a request refused because a
	// resource limit (sessions, stdio processes, body bytes) is reached;
	// its data names the limit's config key.
	CodeLimitExceeded = -32004
	// CodePolicyDenied is Sluice's code for a throw-mode denial.
	CodePolicyDenied = -32001
	// CodeApprovalRequired is Sluice's code for a throw-mode hold.
	CodeApprovalRequired = -32002
)

// WireError is an error that has a JSON-RPC code. Decode and the gateway
// return it for everything a client did wrong; the code is chosen here, in
// one place, and rendered by [ErrorResponse].
type WireError struct {
	Code    int
	Message string
	Data    any
}

func (e *WireError) Error() string { return fmt.Sprintf("jsonrpc %d: %s", e.Code, e.Message) }

// Is matches any *WireError with the same code, so callers can write
// errors.Is(err, &intercept.WireError{Code: intercept.CodeParseError}).
func (e *WireError) Is(target error) bool {
	t, ok := target.(*WireError)
	return ok && t.Code == e.Code
}

func parseError(format string, args ...any) error {
	return &WireError{Code: CodeParseError, Message: "parse error: " + fmt.Sprintf(format, args...)}
}

func invalidRequest(format string, args ...any) error {
	return &WireError{Code: CodeInvalidRequest, Message: "invalid request: " + fmt.Sprintf(format, args...)}
}

// Decode decodes a JSON-RPC body: one message, or a batch array of them.
//
// Decoding is strict, so the gateway never forwards a message whose meaning
// could differ between Sluice and the upstream: whitespace other than
// JSON's around the value, invalid UTF-8, duplicate
// object keys at any depth, envelope or params keys that differ from a known
// key only in case, and trailing data are all rejected. Malformed JSON gives
// a -32700 [WireError]; well-formed JSON that is not JSON-RPC 2.0 gives
// -32600.
func Decode(body []byte) (msgs []*Message, batch bool, err error) {
	// Only JSON's own whitespace is trimmed: bytes.TrimSpace would also
	// drop NBSP, \v, \f, NEL and U+2028, which the body is forwarded with
	// and which an upstream's parser may choke on or split at.
	body = bytes.Trim(body, jsonSpace)
	if len(body) == 0 {
		return nil, false, parseError("empty body")
	}
	// Validate the whole value first (UTF-8, duplicate names, syntax), so
	// that a message whose meaning depends on a parser's tie-breaking is
	// refused before any part of it is interpreted.
	if err := validate(body); err != nil {
		return nil, false, err
	}
	v := jsontext.Value(body)
	switch body[0] {
	case '{':
		m, err := decodeOne(v)
		if err != nil {
			return nil, false, err
		}
		return []*Message{m}, false, nil
	case '[':
		p := getDecoder(body)
		defer p.put()
		dec := &p.dec
		if _, err := dec.ReadToken(); err != nil {
			return nil, true, parseError("%s", describe(err))
		}
		for dec.PeekKind() != ']' {
			raw, err := dec.ReadValue()
			if err != nil {
				return nil, true, parseError("%s", describe(err))
			}
			m, err := decodeOne(raw[:len(raw):len(raw)]) // a slice of body, as eachMember's
			if err != nil {
				return nil, true, err
			}
			msgs = append(msgs, m)
		}
		if len(msgs) == 0 {
			return nil, true, invalidRequest("empty batch")
		}
		if id, ok := reusedID(msgs); ok {
			// Its answers could not be told apart: one screened as the
			// other's (a tasks/list read as a ping's) would go out unread.
			return nil, true, invalidRequest("the batch sends two requests with id %s; give each its own", id)
		}
		return msgs, true, nil
	default:
		return nil, false, invalidRequest("a JSON-RPC message must be an object or a batch array")
	}
}

// reusedID returns an id two requests among msgs share, by IDKey.
func reusedID(msgs []*Message) (string, bool) {
	seen := make(map[string]bool, len(msgs))
	for _, m := range msgs {
		if m.Kind != KindRequest {
			continue
		}
		if seen[m.IDKey()] {
			return m.IDKey(), true
		}
		seen[m.IDKey()] = true
	}
	return "", false
}

// plainInteger reports whether num, a valid JSON number, is an integer
// written in digits alone (no fraction, no exponent, not -0) whose
// magnitude is at most 2^53-1: the one spelling every MCP peer reads as
// the same number and writes back unchanged.
func plainInteger(num []byte) bool {
	digits := num
	if len(digits) > 0 && digits[0] == '-' {
		digits = digits[1:]
	}
	if len(digits) == 0 || len(digits) > 16 || string(digits) == "0" && len(num) > 1 {
		return false
	}
	n := uint64(0)
	for _, c := range digits {
		if c < '0' || c > '9' {
			return false
		}
		n = n*10 + uint64(c-'0')
	}
	return n <= 1<<53-1
}

// jsonSpace is the whitespace JSON allows around a value (RFC 8259, 2).
const jsonSpace = " \t\n\r"

// DecodeMessage decodes exactly one message; batches are rejected.
func DecodeMessage(body []byte) (*Message, error) {
	msgs, batch, err := Decode(body)
	if err != nil {
		return nil, err
	}
	if batch {
		return nil, invalidRequest("batches are not allowed here")
	}
	return msgs[0], nil
}

// validate checks body is exactly one JSON value under RFC 7493 (I-JSON)
// rules: valid UTF-8 and unique member names in every object. What
// wellFormed vouches for skips the decoder; anything else, valid or not,
// is the decoder's to judge and describe.
func validate(body []byte) error {
	if wellFormed(body) {
		return nil
	}
	p := getDecoder(body)
	defer p.put()
	dec := &p.dec
	if _, err := dec.ReadValue(); err != nil {
		if errors.Is(err, jsontext.ErrDuplicateName) {
			return invalidRequest("%s", describe(err))
		}
		return parseError("%s", describe(err))
	}
	if _, err := dec.ReadToken(); err != io.EOF {
		return parseError("data after the JSON value")
	}
	return nil
}

func describe(err error) string {
	var se *jsontext.SyntacticError
	if errors.As(err, &se) {
		return strings.TrimPrefix(se.Error(), "jsontext: ")
	}
	if errors.Is(err, io.ErrUnexpectedEOF) {
		return "unexpected end of input"
	}
	return err.Error()
}

var envelopeKeys = []string{"jsonrpc", "id", "method", "params", "result", "error"}

// decodeOne decodes an already validated JSON value as one message.
func decodeOne(v jsontext.Value) (*Message, error) {
	if v.Kind() != '{' {
		return nil, invalidRequest("a JSON-RPC message must be an object")
	}
	m := &Message{Raw: v}
	var version jsontext.Value
	var hasID, hasMethod, hasResult, hasError bool
	err := eachValidMember(v, func(key string, val jsontext.Value) error {
		switch key {
		case "jsonrpc":
			version = val
		case "id":
			hasID = true
			m.ID = val
		case "method":
			hasMethod = true
			if val.Kind() != '"' {
				return invalidRequest("method must be a string")
			}
			m.Method = unquote(val)
		case "params":
			m.Params = val
		case "result":
			hasResult = true
			m.Result = val
		case "error":
			hasError = true
			m.Error = val
		default:
			if k := foldedMatch(key, envelopeKeys); k != "" {
				return invalidRequest("member %q differs from %q only in case", key, k)
			}
			m.extra = true
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if string(version) != `"2.0"` {
		return nil, invalidRequest(`"jsonrpc" must be "2.0"`)
	}
	if hasID {
		switch m.ID.Kind() {
		case '"':
			if bytes.IndexByte(m.ID, '\\') >= 0 {
				key, _ := jsontext.AppendQuote(nil, unquote(m.ID)) // validated: no error
				m.idKey = string(key)
			}
		case '0':
			if !plainInteger(m.ID) {
				return nil, invalidRequest("id %s must be a string or an integer written in digits, at most 2^53-1 in magnitude: "+
					"a server reads 1.0, 1e0 and 1 as one id (Go and JavaScript ones 2^53+1 as 2^53, the go-sdk 1.5 as 1) and answers with its own spelling, "+
					"so its answer could not be told apart", m.ID)
			}
		case 'n':
			if !hasError {
				return nil, invalidRequest("id may be null only in an error response")
			}
		default:
			return nil, invalidRequest("id must be a string or a number")
		}
	}
	switch {
	case hasMethod && !hasResult && !hasError:
		if m.Method == "" {
			return nil, invalidRequest("method must not be empty")
		}
		if m.Params != nil && m.Params.Kind() != '{' && m.Params.Kind() != '[' {
			return nil, invalidRequest("params must be an object or an array")
		}
		if hasID {
			m.Kind = KindRequest
		} else {
			m.Kind = KindNotification
		}
		if err := m.decodeParams(); err != nil {
			return nil, err
		}
	case hasResult && !hasMethod && !hasError && hasID:
		m.Kind = KindResponse
	case hasError && !hasMethod && !hasResult && hasID:
		if m.Error.Kind() != '{' {
			return nil, invalidRequest("error must be an object")
		}
		m.Kind = KindError
	default:
		return nil, invalidRequest("not a JSON-RPC 2.0 request, notification or response")
	}
	return m, nil
}

// callKeys are the params members whose case variants are refused. task
// makes a request task-augmented: mcp-go's server reads "Task" as task
// and runs the call as a task the gateway did not see asked for.
var callKeys = []string{"name", "arguments", "uri", "_meta", "task"}

// decodeParams pulls out the members the gateway governs. Case variants of
// them are refused: a Go upstream decoding with encoding/json would match
// "Name" to the name field and call a tool policy never saw.
func (m *Message) decodeParams() error {
	if m.Params == nil || m.Params.Kind() != '{' {
		if m.IsAction() {
			return &WireError{Code: CodeInvalidParams, Message: "invalid params: " + m.Method + " needs a params object"}
		}
		return nil
	}
	var hasName bool
	err := eachValidMember(m.Params, func(key string, val jsontext.Value) error {
		m.readExtra = m.readExtra || !readMember(m.Method, key)
		switch key {
		case "requestState":
		case "name":
			if m.Method == "tools/call" || m.Method == "prompts/get" {
				if val.Kind() != '"' {
					return &WireError{Code: CodeInvalidParams, Message: "invalid params: name must be a string"}
				}
				m.Name, hasName = unquote(val), true
			}
		case "uri":
			if m.Method == "resources/read" {
				if val.Kind() != '"' {
					return &WireError{Code: CodeInvalidParams, Message: "invalid params: uri must be a string"}
				}
				m.Name, hasName = unquote(val), true
			}
		case "arguments":
			m.Arguments = val
		case "_meta":
			m.Meta = val
			m.meta, m.metaRead = readMeta(val), true
		default:
			if k := foldedMatch(key, callKeys); k != "" && k != key {
				return &WireError{Code: CodeInvalidParams, Message: fmt.Sprintf("invalid params: member %q differs from %q only in case", key, k)}
			}
			m.paramsExtra = true
		}
		return nil
	})
	if err != nil {
		return err
	}
	if m.IsAction() && strings.IndexFunc(m.Name, UnprintableName) >= 0 {
		// The name reaches logs, terminals and the console: control and
		// bidirectional formatting characters could erase or disguise
		// the line that records the call.
		return &WireError{Code: CodeInvalidParams, Message: fmt.Sprintf("invalid params: %s %q holds a control or formatting character", nameMember(m.Method), m.Name)}
	}
	if m.IsAction() && (!hasName || m.Name == "") {
		what := "name"
		if m.Method == "resources/read" {
			what = "uri"
		}
		return &WireError{Code: CodeInvalidParams, Message: "invalid params: " + m.Method + " needs a non-empty " + what}
	}
	if m.IsCall() {
		if m.Arguments != nil && m.Arguments.Kind() != '{' && m.Arguments.Kind() != 'n' {
			return &WireError{Code: CodeInvalidParams, Message: "invalid params: arguments must be an object"}
		}
	}
	if m.IsAction() && m.Arguments.Kind() == '{' {
		if a, b, found := foldedDuplicate(m.Arguments); found {
			return &WireError{Code: CodeInvalidParams, Message: fmt.Sprintf(
				"invalid params: arguments members %q and %q differ only in case; an upstream that reads names case-insensitively (Go's encoding/json) could take either", a, b)}
		}
	}
	return nil
}

// readMember reports whether key is a params member method defines, when
// method is a read (resources/read, prompts/get); true for other methods.
func readMember(method, key string) bool {
	switch method {
	case "resources/read":
		return key == "uri" || key == "_meta" || key == "requestState"
	case "prompts/get":
		return key == "name" || key == "arguments" || key == "_meta" || key == "requestState"
	}
	return true
}

// unprintableName reports a rune a decided name must not hold: a control
// character (C0, DEL, C1), a bidirectional control, or a line or
// paragraph separator. Zero-width (non-)joiners stay: Persian and other
// scripts use them inside words, emoji sequences between pictures.
func UnprintableName(r rune) bool {
	switch {
	case unicode.IsControl(r):
		return true
	case r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069, r == 0x200e, r == 0x200f, r == 0x061c,
		r == 0x2028, r == 0x2029:
		return true
	}
	return false
}

// nameMember is the params member that names what m.Method acts on.
func nameMember(method string) string {
	if method == "resources/read" {
		return "uri"
	}
	return "name"
}

// foldedDuplicate finds, in a validated JSON value at any depth, two
// members of one object whose names are equal under Unicode case folding
// (strings.EqualFold, as encoding/json matches names to fields): policy
// would read one ("url") and an upstream binding a struct the other
// ("URL", "Url", "ur\u004c").
func foldedDuplicate(v jsontext.Value) (a, b string, found bool) {
	if !bytes.ContainsAny(v, "{") || bytes.Count(v, []byte{':'}) < 2 {
		return "", "", false // fewer than two members anywhere
	}
	p := getDecoder(v)
	defer p.put()
	// Exact duplicates are fold-equal too, so the walk finds them itself:
	// the decoder's own check (a map of every object's names) would only
	// do again what validating the message did, and was half the walk's
	// cost on an object of many members.
	p.dec.Reset(&p.bb, jsontext.AllowDuplicateNames(true))
	return foldWalk(&p.dec)
}

// maxFoldPairs bounds the pairwise comparisons of one object's names;
// a larger object compares folded copies in a map.
const maxFoldPairs = 16

func foldWalk(dec *jsontext.Decoder) (a, b string, found bool) {
	switch dec.PeekKind() {
	case '{':
		if _, err := dec.ReadToken(); err != nil {
			return "", "", false
		}
		var small [maxFoldPairs]jsontext.Value
		names := small[:0]
		var folded map[string]string
		for dec.PeekKind() != '}' {
			name, err := dec.ReadValue()
			if err != nil {
				return "", "", false
			}
			switch {
			case folded != nil:
				n := memberName(name)
				f := strings.ToLower(strings.ToUpper(n))
				if o, dup := folded[f]; dup {
					return o, n, true
				}
				folded[f] = n
			case len(names) < maxFoldPairs:
				for _, o := range names {
					if namesFoldEqual(o, name) {
						return memberName(o), memberName(name), true
					}
				}
				names = append(names, name)
			default:
				folded = make(map[string]string, 2*maxFoldPairs)
				for _, o := range append(names, name) {
					n := memberName(o)
					f := strings.ToLower(strings.ToUpper(n))
					if p, dup := folded[f]; dup {
						return p, n, true
					}
					folded[f] = n
				}
			}
			if a, b, found := foldWalk(dec); found {
				return a, b, true
			}
		}
		_, _ = dec.ReadToken()
	case '[':
		if _, err := dec.ReadToken(); err != nil {
			return "", "", false
		}
		for dec.PeekKind() != ']' {
			if a, b, found := foldWalk(dec); found {
				return a, b, true
			}
		}
		_, _ = dec.ReadToken()
	default:
		_ = dec.SkipValue()
	}
	return "", "", false
}

// namesFoldEqual reports whether two member names, as read (quoted),
// are equal under case folding; plain ASCII names without escapes are
// compared in place.
func namesFoldEqual(x, y jsontext.Value) bool {
	if len(x) == len(y) && asciiPlain(x) && asciiPlain(y) {
		return bytes.EqualFold(x, y)
	}
	if asciiPlain(x) && asciiPlain(y) {
		return false
	}
	return strings.EqualFold(memberName(x), memberName(y))
}

func asciiPlain(b []byte) bool {
	for _, c := range b {
		if c >= 0x80 || c == '\\' {
			return false
		}
	}
	return true
}

// eachMember calls fn for every member of a validated JSON object, in order.
// The values fn gets are slices of obj (capacity-limited, so appending to
// one copies), not copies: obj must not change while they are in use,
// which holds for a message's Raw and its parts.
func eachMember(obj jsontext.Value, fn func(key string, val jsontext.Value) error) error {
	p := getDecoder(obj)
	defer p.put()
	dec := &p.dec
	if _, err := dec.ReadToken(); err != nil {
		return parseError("%s", describe(err))
	}
	for dec.PeekKind() != '}' {
		name, err := dec.ReadValue()
		if err != nil {
			return parseError("%s", describe(err))
		}
		key := memberName(name)
		val, err := dec.ReadValue()
		if err != nil {
			return parseError("%s", describe(err))
		}
		if err := fn(key, val[:len(val):len(val)]); err != nil {
			return err
		}
	}
	return nil
}

// memberName is the name of an object member as the decoder read it (a
// validated JSON string, quotes included). The names of MCP, JSON-RPC and
// A2A messages cost no allocation (knownNames); decoding a message reads
// several of them.
func memberName(raw jsontext.Value) string {
	if len(raw) >= 2 && bytes.IndexByte(raw, '\\') < 0 {
		b := raw[1 : len(raw)-1]
		if s, ok := known(b); ok {
			return s
		}
		return string(b)
	}
	s, _ := jsontext.AppendUnquote(nil, raw) // validated already: no error
	return string(s)
}

// knownNames are the member names and string values (methods, the
// version) messages carry most.
var knownNames = []string{"jsonrpc", "id", "method", "params", "result", "error", "code", "message", "data",
	"name", "arguments", "_meta", "progressToken", "protocolVersion", "capabilities", "clientInfo", "serverInfo",
	"version", "title", "cursor", "nextCursor", "uri", "content", "type", "text", "isError", "structuredContent",
	"tools", "description", "inputSchema", "outputSchema", "annotations", "properties", "required",
	"io.modelcontextprotocol/protocolVersion", "io.modelcontextprotocol/clientInfo", "io.modelcontextprotocol/clientCapabilities",
	"traceparent", "tracestate", "requestState", "inputResponses", "task", "taskId", "contextId", "kind", "parts",
	"messageId", "role", "status", "state", "artifacts", "metadata", "configuration", "history",
	// Values read the same way: methods and the version.
	"2.0", "initialize", "ping", "tools/call", "tools/list", "resources/read", "resources/list", "prompts/get", "prompts/list",
	"notifications/initialized", "notifications/cancelled", "notifications/progress", "server/discover",
	"message/send", "message/stream", "SendMessage", "SendStreamingMessage", "tasks/get", "GetTask"}

// knownByLen holds knownNames by length: known looks a name up among the
// few of its length, comparing bytes, where a map lookup hashed it (some
// twenty lookups a tools/call, ~1.8 % of the sluice child's CPU in sluice
// bench).
var knownByLen = func() (t [maxKnownLen + 1][]string) {
	for _, n := range knownNames {
		t[len(n)] = append(t[len(n)], n)
	}
	return t
}()

// maxKnownLen is the length of the longest of knownNames.
const maxKnownLen = len("io.modelcontextprotocol/clientCapabilities")

// known returns the one of knownNames b spells, if any.
func known(b []byte) (string, bool) {
	if len(b) == 0 || len(b) > maxKnownLen {
		return "", false
	}
	for _, n := range knownByLen[len(b)] {
		if n[0] == b[0] && n == string(b) {
			return n, true
		}
	}
	return "", false
}

// pooledDecoder reads a byte slice in place: a Decoder reading a
// bytes.Buffer uses the buffer's bytes as its own, so the values it
// returns are slices of the input, and neither is copied.
type pooledDecoder struct {
	dec jsontext.Decoder
	bb  bytes.Buffer
}

var decoders = sync.Pool{New: func() any { return new(pooledDecoder) }}

func getDecoder(b []byte) *pooledDecoder {
	p := decoders.Get().(*pooledDecoder)
	p.bb = *bytes.NewBuffer(b)
	p.dec.Reset(&p.bb)
	return p
}

func (p *pooledDecoder) put() {
	p.bb = bytes.Buffer{} // keep no reference to the input
	p.dec.Reset(&p.bb)
	decoders.Put(p)
}

func foldedMatch(key string, known []string) string {
	for _, k := range known {
		if strings.EqualFold(key, k) {
			return k
		}
	}
	return ""
}

// unquote returns the Go string of a validated JSON string value.
func unquote(v jsontext.Value) string {
	if len(v) >= 2 && bytes.IndexByte(v, '\\') < 0 {
		b := v[1 : len(v)-1] // validated, and nothing escaped
		if s, ok := known(b); ok {
			return s
		}
		return string(b)
	}
	p := getDecoder(v)
	defer p.put()
	tok, err := p.dec.ReadToken()
	if err != nil {
		return ""
	}
	return tok.String()
}
