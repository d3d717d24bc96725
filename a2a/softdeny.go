package a2a

import (
	"bytes"
	"fmt"
	"io"
	"strings"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/sluicehq/sluice/intercept"
)

// forgedSoftDenial reports whether result, an agent's answer, holds a
// task in state rejected whose status message carries a data part shaped
// like the gateway's soft deny: an envelope member (status "denied" or
// "approval_required", publicReason, txn_id, an approval id; in any
// case). Only the gateway rejects a task so, and its soft denials never
// come from the agent. Past maxWalkDepth levels it is not read on: what
// is there is taken for one if it may spell a rejected state at all.
func forgedSoftDenial(result jsontext.Value) bool {
	found := false
	var walk func(v jsontext.Value, depth int)
	walk = func(v jsontext.Value, depth int) {
		if k := v.Kind(); (k == '[' || k == '{') && depth == maxWalkDepth {
			found = found || mayBeRejected(v)
			return
		}
		switch v.Kind() {
		case '[':
			_ = intercept.EachElement(v, func(_ int, e jsontext.Value) error {
				walk(e, depth+1)
				return nil
			})
		case '{':
			if st := intercept.Member(v, "status"); st.Kind() == '{' && rejectedState(intercept.StringMember(st, "state")) {
				parts := intercept.Member(intercept.Member(st, "message"), "parts")
				_ = intercept.EachElement(parts, func(_ int, p jsontext.Value) error {
					found = found || envelopeLike(intercept.Member(p, "data"), depth)
					return nil
				})
			}
			_ = intercept.EachMember(v, func(_ string, m jsontext.Value) error {
				walk(m, depth+1)
				return nil
			})
		}
	}
	walk(result, 0)
	return found
}

// mayBeRejected reports whether v, JSON text, may hold a rejected state
// as rejectedState reads one: a string (or name) that folds to hold
// "rejected", read in one pass; v unreadable may.
func mayBeRejected(v jsontext.Value) bool {
	dec := jsontext.NewDecoder(bytes.NewReader(v))
	for {
		tok, err := dec.ReadToken()
		if err != nil {
			return err != io.EOF
		}
		if tok.Kind() == '"' && strings.Contains(foldKey(tok.String()), "rejected") {
			return true
		}
	}
}

// rejectedState reports a task state that is rejected, in either
// version's spelling.
func rejectedState(s string) bool {
	s = foldKey(s)
	return s == "rejected" || s == "taskstaterejected"
}

// envelopeLike reports whether data, a data part's, has a member of the
// gateway's envelope that a client tells a denial or hold by (found at
// depth: past maxWalkDepth levels, one it may be).
func envelopeLike(data jsontext.Value, depth int) bool {
	if data.Kind() != '{' {
		return false
	}
	if depth >= maxWalkDepth {
		return true
	}
	found := false
	_ = intercept.EachMember(data, func(k string, m jsontext.Value) error {
		switch foldKey(k) {
		case "status":
			s := foldKey(unquote(m))
			found = found || s == "denied" || s == "approvalrequired"
		case "publicreason", "txnid", "approvalid":
			found = true
		case "data":
			found = found || envelopeLike(m, depth+1)
		}
		return nil
	})
	return found
}

// forgedDenialError is the error an agent's answer holding a forged soft
// deny is replaced with.
func forgedDenialError(agentName string) *intercept.WireError {
	return &intercept.WireError{Code: intercept.CodeInternalError, Message: fmt.Sprintf(
		"agent %q answered with a rejected task carrying a denial envelope (status, publicReason, txn_id or an approval id in a data part), which only the gateway writes: not passed on", agentName)}
}
