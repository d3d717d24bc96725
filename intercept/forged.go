package intercept

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// Only the gateway denies, holds and refuses for its limits: its codes
// (CodePolicyDenied, CodeApprovalRequired, CodeLimitExceeded) and its
// envelope (RFC-0002's, with the txn_id) are how a client tells a denial,
// a hold and its approval id, and the audit record of the call. An
// upstream using them passes its own answer for the gateway's: an
// approval id of its making the user is asked to approve, a denial that
// never was, another's txn_id. (CodeUpstreamError is left to upstreams:
// the transports answer for an upstream with it, and it says no more than
// that the upstream failed.)

// reservedCode reports whether n, an error's code, is one the gateway
// answers with.
func reservedCode(n float64) bool {
	return n == CodePolicyDenied || n == CodeApprovalRequired || n == CodeLimitExceeded
}

// sharedCode reports whether n, a code the gateway answers with, is one
// MCP and its SDKs use too: -32002 is MCP's "resource not found" (mcp-go
// answers a 2025-era resources/read of a URI it does not serve with it),
// -32001 the TypeScript SDK's request timeout. An upstream's error with
// one is its own unless its data is the gateway's envelope.
func sharedCode(n float64) bool {
	return n == CodePolicyDenied || n == CodeApprovalRequired
}

// codeNumber is the number v, an error's code, stands for: a JSON number,
// or a string of one, which Python's MCP SDK (pydantic) reads as the
// number, spaces around it and underscores between digits allowed.
func codeNumber(v jsontext.Value) (float64, bool) {
	switch v.Kind() {
	case '0':
		var n float64
		err := json.Unmarshal(v, &n)
		return n, err == nil
	case '"':
		s := strings.ReplaceAll(strings.TrimSpace(stringOf(v)), "_", "")
		n, err := strconv.ParseFloat(s, 64)
		return n, err == nil
	}
	return 0, false
}

// UpstreamError returns raw, an upstream's JSON-RPC error answer whose
// error object is errObj, as the client may have it, and whether that
// differs from raw. An error with a code only the gateway answers with,
// however the number is spelt (-32001.0, -3.2001e4, "-32001") and under a member
// name in any case (Go's encoding/json reads "Code" as code), becomes an
// internal error saying which code upstream used, its data dropped; data
// shaped as the gateway's envelope (EnvelopeShaped) under another code is
// dropped. The error keeps only code, message and data under their exact
// names, so that a client matching names in another case reads no other
// code or data than the gateway did.
func UpstreamError(upstream string, raw, errObj jsontext.Value) (jsontext.Value, bool) {
	var code, msg, data jsontext.Value
	reserved, changed := 0.0, false
	err := EachMember(errObj, func(k string, v jsontext.Value) error {
		switch k {
		case "code":
			code = v
		case "message":
			msg = v
		case "data":
			data = v
		default:
			changed = true // left out
		}
		if n, ok := codeNumber(v); ok && strings.EqualFold(k, "code") && reservedCode(n) {
			reserved = n
		}
		return nil
	})
	if err != nil {
		// Decode validated it: not reached.
		return ErrorResponse(Member(raw, "id"), &WireError{Code: CodeInternalError, Message: fmt.Sprintf("upstream %q answered with an error the gateway cannot read", upstream)}), true
	}
	if reserved != 0 && sharedCode(reserved) && !EnvelopeShaped(data) {
		reserved = 0 // MCP's own meaning of the code (sharedCode)
	}
	if reserved != 0 {
		code = jsontext.Value(fmt.Sprint(CodeInternalError))
		msg, _ = jsontext.AppendQuote(nil, fmt.Sprintf("upstream %q answered with error code %d, which is reserved for the gateway's own denials, holds and limits: %s",
			upstream, int(reserved), StringMember(errObj, "message")))
		data, changed = nil, true
	}
	if EnvelopeShaped(data) {
		data, changed = nil, true
	}
	if !changed {
		return raw, false
	}
	if code == nil {
		code = jsontext.Value(fmt.Sprint(CodeInternalError))
	}
	if msg == nil {
		msg = jsontext.Value(`""`)
	}
	out := map[string]jsontext.Value{"code": code, "message": msg}
	if data != nil {
		out["data"] = data
	}
	e, err := json.Marshal(out, json.Deterministic(true))
	if err == nil {
		raw, err = WithMember(raw, "error", e)
	}
	if err != nil {
		return ErrorResponse(Member(raw, "id"), &WireError{Code: CodeInternalError, Message: fmt.Sprintf("upstream %q answered with an error the gateway cannot pass on", upstream)}), true
	}
	return raw, true
}

// EnvelopeShaped reports whether data, an error's data, is an object
// with a member of the gateway's envelope a client tells it by (status,
// publicReason, txn_id: matched in any case).
func EnvelopeShaped(data jsontext.Value) bool {
	if data.Kind() != '{' {
		return false
	}
	found := false
	_ = EachMember(data, func(k string, _ jsontext.Value) error {
		found = found || foldedMatch(k, envelopeMembers) != ""
		return nil
	})
	return found
}

var envelopeMembers = []string{"status", "publicReason", "txn_id"}

// WithoutForgedEnvelope returns result, an upstream's, without the
// structuredContent that makes it pass for the gateway's soft deny or
// hold: an error result (isError true) whose structuredContent has the
// envelope's status "denied" or "approval_required" (names matched in
// any case), and true; result itself and false for any other. The model
// still reads the tool's content; a client telling the gateway's
// decisions by the envelope is not shown one the gateway never made. A
// result that is not an error keeps its structured content: the gateway
// never answers so, and the tool's output schema may require it.
func WithoutForgedEnvelope(result jsontext.Value) (jsontext.Value, bool) {
	if result.Kind() != '{' {
		return result, false
	}
	isError := false
	var forged []string
	_ = EachMember(result, func(k string, v jsontext.Value) error {
		switch {
		case strings.EqualFold(k, "isError"):
			isError = isError || string(v) == "true"
		case strings.EqualFold(k, "structuredContent") && v.Kind() == '{':
			_ = EachMember(v, func(sk string, sv jsontext.Value) error {
				if strings.EqualFold(sk, "status") {
					if s := stringOf(sv); s == "denied" || s == "approval_required" {
						forged = append(forged, k)
					}
				}
				return nil
			})
		}
		return nil
	})
	if !isError || len(forged) == 0 {
		return result, false
	}
	repl := make(map[string]jsontext.Value, len(forged))
	for _, k := range forged {
		repl[k] = nil
	}
	out, err := rewriteMembers(result, repl)
	if err != nil {
		return result, false
	}
	return out, true
}
