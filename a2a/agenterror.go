package a2a

import (
	"fmt"
	"strings"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/sluicehq/sluice/intercept"
)

// agentError is the agent's JSON-RPC error answer raw, whose error is
// errObj, as the client gets it. Only the gateway denies and holds: its
// codes (-32090, -32091, however the number is spelt) and its envelope
// (error data with a status, publicReason or txn_id member) are how a
// client tells its denials, holds and approval ids. An agent's error with
// one of the codes becomes an internal error saying so, its data dropped;
// one whose code is not a number, an internal error; envelope-shaped data
// under another code is dropped. The error keeps
// only the members JSON-RPC defines, under their exact names, so a client
// matching names in another case (Go's encoding/json) reads no other
// code or data than the gateway did.
func agentError(agentName string, raw, errObj jsontext.Value) (jsontext.Value, error) {
	code, msg, data := intercept.Member(errObj, "code"), intercept.Member(errObj, "message"), intercept.Member(errObj, "data")
	var n float64
	if code.Kind() == '0' && json.Unmarshal(code, &n) == nil && (n == codePolicyDenied || n == codeApprovalRequired) {
		code = jsontext.Value(fmt.Sprint(intercept.CodeInternalError))
		msg, _ = jsontext.AppendQuote(nil, fmt.Sprintf("agent %q answered with error code %d, which only the gateway's denials and holds use: %s",
			agentName, int(n), intercept.StringMember(errObj, "message")))
		data = nil
	}
	if code.Kind() != '0' {
		// Not a JSON-RPC code (a string, null, missing): the agent's
		// internal error. A reader that coerces (pydantic) would take
		// "-32091" for the gateway's code.
		code = jsontext.Value(fmt.Sprint(intercept.CodeInternalError))
	}
	if envelopeShaped(data) {
		data = nil
	}
	if msg == nil {
		msg = jsontext.Value(`""`)
	}
	out := map[string]jsontext.Value{"code": code, "message": msg}
	if data != nil {
		out["data"] = data
	}
	e, err := json.Marshal(out, json.Deterministic(true))
	if err != nil {
		return nil, err
	}
	return intercept.WithMember(raw, "error", e)
}

// envelopeShaped reports whether data, an error's data, is an object with
// a member of the gateway's envelope a client tells it by (status,
// publicReason, txn_id: matched in any case).
func envelopeShaped(data jsontext.Value) bool {
	if data.Kind() != '{' {
		return false
	}
	found := false
	_ = intercept.EachMember(data, func(k string, _ jsontext.Value) error {
		for _, m := range []string{"status", "publicReason", "txn_id"} {
			found = found || strings.EqualFold(k, m)
		}
		return nil
	})
	return found
}
