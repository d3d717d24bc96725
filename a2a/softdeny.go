package a2a

import (
	"bytes"
	"fmt"
	"io"
	"strings"
	"unicode"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/sluicehq/sluice/intercept"
)

// Only the gateway writes a soft deny: a task in state rejected whose
// status message carries its envelope (status "denied" or
// "approval_required", publicReason, txn_id, an approval id under data)
// as a data part. An agent rejects tasks too, often with data of its own
// (a loan agent's {"status":"denied","reason":"credit score too low"}).
// As intercept.WithoutForgedEnvelope does for an MCP tool's error result,
// the agent's rejection is passed on without what makes it pass for the
// gateway's: here the envelope's members, not the whole data part, which
// in A2A is often the agent's only answer (an MCP tool's structured
// content repeats its text).

// withoutForgedEnvelope returns result, an agent's answer, with the
// envelope members (envelopeMember) left out of every data part of the
// status message of each task in state rejected in it (names matched
// in any case, snake or kebab case, as a reader matching names loosely
// takes them), and whether it differs from result. ok is false when it
// cannot be made so: past maxWalkDepth levels the answer is not read on,
// and what is there may spell a rejected state (mayBeRejected).
func withoutForgedEnvelope(result jsontext.Value) (out jsontext.Value, changed, ok bool) {
	if !mayBeRejected(result) {
		// No task in it is rejected: one pass, nothing rebuilt.
		return result, false, true
	}
	return stripTasks(result, 0)
}

// stripTasks is withoutForgedEnvelope of v, found depth levels down.
func stripTasks(v jsontext.Value, depth int) (jsontext.Value, bool, bool) {
	switch v.Kind() {
	case '[', '{':
	default:
		return v, false, true
	}
	if depth == maxWalkDepth {
		return v, false, !mayBeRejected(v)
	}
	if v.Kind() == '[' {
		return mapElements(v, func(e jsontext.Value) (jsontext.Value, bool, bool) { return stripTasks(e, depth+1) })
	}
	var ms []jsonMember
	changed, ok := false, true
	err := intercept.EachMember(v, func(k string, m jsontext.Value) error {
		c1, o1 := false, true
		if foldKey(k) == "status" && m.Kind() == '{' && rejectedStatus(m) {
			m, c1, o1 = mapMembers(m, "message", func(msg jsontext.Value) (jsontext.Value, bool, bool) {
				return mapMembers(msg, "parts", func(parts jsontext.Value) (jsontext.Value, bool, bool) {
					return mapElements(parts, func(p jsontext.Value) (jsontext.Value, bool, bool) {
						return mapMembers(p, "data", func(d jsontext.Value) (jsontext.Value, bool, bool) {
							return withoutEnvelope(d, depth)
						})
					})
				})
			})
		}
		m, c2, o2 := stripTasks(m, depth+1)
		changed, ok = changed || c1 || c2, ok && o1 && o2
		ms = append(ms, jsonMember{k, m})
		return nil
	})
	if err != nil || !changed {
		return v, false, ok && err == nil
	}
	return objectOf(ms), true, ok
}

// rejectedStatus reports whether st, a task's status, has a state that
// may be read as rejected (rejectedState).
func rejectedStatus(st jsontext.Value) bool {
	found := false
	_ = intercept.EachMember(st, func(k string, m jsontext.Value) error {
		found = found || foldKey(k) == "state" && rejectedState(m)
		return nil
	})
	return found
}

// withoutEnvelope returns data, a data part's, without the members of
// the gateway's envelope a client tells a denial or hold by: a status
// "denied" or "approval_required", publicReason, txn_id, and an approval
// id, also under data, where the gateway puts it (found at depth: past
// maxWalkDepth levels, not ok).
func withoutEnvelope(data jsontext.Value, depth int) (jsontext.Value, bool, bool) {
	if data.Kind() != '{' {
		return data, false, true
	}
	if depth >= maxWalkDepth {
		return data, false, false
	}
	var ms []jsonMember
	changed, ok := false, true
	err := intercept.EachMember(data, func(k string, m jsontext.Value) error {
		switch foldKey(k) {
		case "status":
			if s := foldKey(unquote(m)); s == "denied" || s == "approvalrequired" {
				changed = true
				return nil
			}
		case "publicreason", "txnid", "approvalid":
			changed = true
			return nil
		case "data":
			var c, o bool
			m, c, o = withoutEnvelope(m, depth+1)
			changed, ok = changed || c, ok && o
		}
		ms = append(ms, jsonMember{k, m})
		return nil
	})
	if err != nil || !changed {
		return data, false, ok && err == nil
	}
	return objectOf(ms), true, ok
}

// mapMembers returns obj with each member whose name folds to key
// replaced by what fn makes of it; whether it changed, and whether fn
// was ok with each. Anything but an object is as it was.
func mapMembers(obj jsontext.Value, key string, fn func(jsontext.Value) (jsontext.Value, bool, bool)) (jsontext.Value, bool, bool) {
	if obj.Kind() != '{' {
		return obj, false, true
	}
	var ms []jsonMember
	changed, ok := false, true
	err := intercept.EachMember(obj, func(k string, m jsontext.Value) error {
		if foldKey(k) == key {
			var c, o bool
			m, c, o = fn(m)
			changed, ok = changed || c, ok && o
		}
		ms = append(ms, jsonMember{k, m})
		return nil
	})
	if err != nil || !changed {
		return obj, false, ok && err == nil
	}
	return objectOf(ms), true, ok
}

// mapElements returns arr with each element replaced by what fn makes
// of it, as mapMembers. Anything but an array is as it was.
func mapElements(arr jsontext.Value, fn func(jsontext.Value) (jsontext.Value, bool, bool)) (jsontext.Value, bool, bool) {
	if arr.Kind() != '[' {
		return arr, false, true
	}
	var es []jsontext.Value
	changed, ok := false, true
	err := intercept.EachElement(arr, func(_ int, e jsontext.Value) error {
		e, c, o := fn(e)
		changed, ok = changed || c, ok && o
		es = append(es, e)
		return nil
	})
	if err != nil || !changed {
		return arr, false, ok && err == nil
	}
	out := []byte{'['}
	for i, e := range es {
		if i > 0 {
			out = append(out, ',')
		}
		out = append(out, e...)
	}
	return append(out, ']'), true, ok
}

// objectOf is the JSON object of ms, in order.
func objectOf(ms []jsonMember) jsontext.Value {
	out := []byte{'{'}
	for i, m := range ms {
		if i > 0 {
			out = append(out, ',')
		}
		out, _ = jsontext.AppendQuote(out, m.name)
		out = append(out, ':')
		out = append(out, m.value...)
	}
	return append(out, '}')
}

// mayBeRejected reports whether v, JSON text, may hold a rejected state
// as rejectedState reads one: a string (or name) that folds to hold
// "rejected", or a number or a string with a digit in it as the value of
// a member whose name folds to "state", read in one pass; v unreadable
// may.
func mayBeRejected(v jsontext.Value) bool {
	dec := jsontext.NewDecoder(bytes.NewReader(v))
	state := false // the token before is a member's name folding to "state"
	for {
		tok, err := dec.ReadToken()
		if err != nil {
			return err != io.EOF
		}
		k := tok.Kind()
		if state && (k == '0' || k == '"' && strings.IndexFunc(tok.String(), unicode.IsDigit) >= 0) {
			return true
		}
		in, n := dec.StackIndex(dec.StackDepth())
		state = k == '"' && in == '{' && n%2 == 1 && foldKey(tok.String()) == "state"
		if k == '"' && strings.Contains(foldKey(tok.String()), "rejected") {
			return true
		}
	}
}

// rejectedState reports whether v, a task's state, may be read as
// rejected: a name that folds to "rejected" or "taskstaterejected", or
// a number, or a string with a digit in it. A 1.0 client reads ProtoJSON,
// whose readers take an enum's number for its name (protojson: 7, 7.0 and
// 70e-1 are TASK_STATE_REJECTED; Python's json_format: "7", "٧" and 7.5
// too, by int()): before, only names were read, and an agent's task in
// state 7 passed its envelope on as the gateway's
// (TestAttackAgentForgesSoftDenialStateNumber).
func rejectedState(v jsontext.Value) bool {
	switch v.Kind() {
	case '0':
		return true
	case '"':
		s := unquote(v)
		f := foldKey(s)
		return f == "rejected" || f == "taskstaterejected" || strings.IndexFunc(s, unicode.IsDigit) >= 0
	}
	return false
}

// forgedDenialError is the error an agent's answer is replaced with when
// the envelope members cannot be left out of it (withoutForgedEnvelope
// not ok).
func forgedDenialError(agentName string) *intercept.WireError {
	return &intercept.WireError{Code: intercept.CodeInternalError, Message: fmt.Sprintf(
		"agent %q answered with what may be a rejected task nested deeper than the %d levels the gateway reads, where a denial envelope (status, publicReason, txn_id or an approval id in a data part), which only the gateway writes, cannot be taken out: not passed on", agentName, maxWalkDepth)}
}
