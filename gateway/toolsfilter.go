package gateway

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/sluicehq/sluice/intercept"
)

// Hiding tools: every transport passes each tools/list response through
// hideToolsIn before the client gets it, with the call context of the
// request it answers, so that the tools the agent can never call are left
// out when the interceptor's HideDeniedTools is set. The interceptor's
// ObserveTools still gets the upstream's whole list: the inventory must see
// what the upstream really offers.

// hideToolsIn returns raw, a tools/list response whose result is result,
// with the tools the client of cc can never call removed, and whether
// anything was removed.
func hideToolsIn(ctx context.Context, ic *intercept.Interceptor, cc intercept.CallContext, raw, result jsontext.Value) (jsontext.Value, bool) {
	res, changed := ic.FilterToolsResult(ctx, cc, result)
	if !changed {
		return raw, false
	}
	out, err := intercept.WithMember(raw, "result", res)
	if err != nil {
		return raw, false
	}
	return out, true
}

// screenToolsIn returns raw, a tools/list response (to id) whose result
// is result, as the client may see it: refused with an error when it
// could be read two ways (intercept.CheckToolsResult), so that the
// inventory and the classifier never record one tool while the client is
// shown another; else with the tools hidden that the client of cc can
// never call, when the interceptor's HideDeniedTools is set. Each tool is
// first shown as the interceptor's Observer allows (a ToolScreener: the
// inventory shows a drifted tool as pinned and leaves out one outside the
// pin), so the model never reads a definition nobody approved; the list
// must have been recorded with ObserveTools before. changed reports
// whether it differs from raw.
func screenToolsIn(ctx context.Context, ic *intercept.Interceptor, cc intercept.CallContext, id, raw, result jsontext.Value) (jsontext.Value, bool) {
	if err := intercept.CheckToolsResult(result); err != nil {
		return listRefused(id, "tools/list", err), true
	}
	res, screened, err := ic.ScreenToolsResult(cc, result)
	if err != nil {
		return listRefused(id, "tools/list", err), true
	}
	if screened {
		if raw, err = intercept.WithMember(raw, "result", res); err != nil {
			return listRefused(id, "tools/list", err), true
		}
		result = res
	}
	if !ic.HideDeniedTools {
		return raw, screened
	}
	if out, hidden := hideToolsIn(ctx, ic, cc, raw, result); hidden {
		return out, true
	}
	return raw, screened
}

// screenAnswer returns raw, the response (to id, whose IDKey is idKey) of
// a method request (a list asked with cursor: intercept.ListCursor) whose
// result is result, as the client of cc may see it: a tools/list answer
// screened (screenToolsIn); a prompts/list,
// resources/list or resources/templates/list answer without the items,
// an initialize or server/discover answer without the instructions, that
// the interceptor's Observer withholds (intercept.ListScreener); a
// tasks/list answer
// holding only the client's own tasks; a list's nextCursor recorded as
// given to the client; a task handle in any other answer
// is recorded as the client's (before the client has it, so its first
// tasks/get finds it), and so is a requestState as issued for that
// request (so that its retry may carry it). changed reports whether it
// differs from raw.
func screenAnswer(ctx context.Context, ic *intercept.Interceptor, cc intercept.CallContext, method, cursor string, id jsontext.Value, idKey string, raw, result jsontext.Value) (jsontext.Value, bool) {
	forged := false
	if res, ok := intercept.WithoutForgedEnvelope(result); ok {
		// An error result passing for the gateway's soft deny or hold:
		// only the gateway's carries its envelope.
		if out, err := intercept.WithMember(raw, "result", res); err == nil {
			raw, result, forged = out, res, true
		}
	}
	if out, withheld := ic.ScreenResult(cc, method, id, idKey, raw, result); withheld {
		// What an action returned that the model must not read
		// (classifier.on_result_injection: withhold).
		return out, true
	}
	if res, ok := privateCache(result); ok {
		if out, err := intercept.WithMember(raw, "result", res); err == nil {
			out, _ = screenAnswerOf(ctx, ic, cc, method, cursor, id, idKey, out, res)
			return out, true
		}
	}
	out, changed := screenAnswerOf(ctx, ic, cc, method, cursor, id, idKey, raw, result)
	return out, changed || forged
}

// screenError returns raw, an upstream's error answer (to id, whose IDKey
// is idKey) to a request of method (or none: "") of the client of cc,
// whose error object is errObj, as the client may see it: withheld as the
// interceptor says (ScreenError), else never passing for the gateway's
// own denial, hold or limit (intercept.UpstreamError). changed reports
// whether it differs from raw.
func screenError(ic *intercept.Interceptor, cc intercept.CallContext, method string, id jsontext.Value, idKey string, raw, errObj jsontext.Value) (jsontext.Value, bool) {
	if out, withheld := ic.ScreenError(cc, method, id, idKey, raw, errObj); withheld {
		return out, true
	}
	return intercept.UpstreamError(cc.Upstream, raw, errObj)
}

// privateCache returns result marked cacheScope "private" when it carries
// SEP-2549's cache hints with another scope (or none, which clients take
// for "public"): what the gateway passes on is decided, or screened, for
// its caller, and a cache must not serve it to another. The TTL stands.
func privateCache(result jsontext.Value) (jsontext.Value, bool) {
	scope := intercept.Member(result, "cacheScope")
	if string(scope) == `"private"` || scope == nil && intercept.Member(result, "ttlMs") == nil {
		return nil, false
	}
	out, err := intercept.WithMember(result, "cacheScope", jsontext.Value(`"private"`))
	return out, err == nil
}

// screenAnswerOf is screenAnswer but for the cache hints.
func screenAnswerOf(ctx context.Context, ic *intercept.Interceptor, cc intercept.CallContext, method, cursor string, id jsontext.Value, idKey string, raw, result jsontext.Value) (jsontext.Value, bool) {
	// A list's next cursor is this client's to send back (intercept's
	// carry.go): recorded before the client has it.
	ic.ObserveCursor(ctx, cc, method, result)
	// So are the resources and prompts it lists: reading one of them
	// carries nothing of the client's (intercept's listed.go).
	ic.ObserveListedPage(ctx, cc, method, cursor, result)
	if ic.ScreensList(method) {
		// Prompts, resources, templates and instructions the inventory
		// withholds for looking poisoned.
		res, changed := ic.ScreenListResult(cc, method, result)
		// A task handle or requestState in such an answer (an
		// input_required result of any request) is recorded as in any
		// other.
		ic.ObserveTask(ctx, cc, res)
		ic.ObserveRequestState(ctx, cc, idKey, res)
		if !changed {
			return raw, false
		}
		out, err := intercept.WithMember(raw, "result", res)
		if err != nil {
			return listRefused(id, method, err), true
		}
		return out, true
	}
	switch method {
	case "":
		return raw, false
	case "tools/list":
		return screenToolsIn(ctx, ic, cc, id, raw, result)
	case "tasks/list":
		res, changed := ic.FilterTasksResult(ctx, cc, result)
		// Its tasks' statusMessages are screened as a tasks/get answer's
		// are: the client's own tasks, what it is shown.
		if out, withheld := ic.ScreenTaskList(cc, id, idKey, raw, res); withheld {
			return out, true
		}
		if !changed {
			return raw, false
		}
		out, err := intercept.WithMember(raw, "result", res)
		if err != nil {
			return intercept.ErrorResponse(id, &intercept.WireError{Code: intercept.CodeUpstreamError, Message: "the upstream's tasks/list answer was refused: " + err.Error()}), true
		}
		return out, true
	}
	ic.ObserveTask(ctx, cc, result)
	ic.ObserveRequestState(ctx, cc, idKey, result)
	return raw, false
}

// screened reports whether b, a message of an upstream's answer to a
// method request, needs screenAnswer: a list it screens, an action's
// result ic may withhold, or an answer that may hold a task handle or a
// requestState.
func screened(ic *intercept.Interceptor, method string, b []byte) bool {
	return listMethod(method) || ic.WithholdsResults(method) || (method != "" && (recorded(b) || cacheHinted(b))) || mayForgeEnvelope(b)
}

// mayForgeEnvelope reports whether b, a message from an upstream, may
// hold an error (which screenError screens: passing for the gateway's own
// denial, hold or limit, or, whatever request it answers, one the
// interceptor withholds) or an error result passing for the gateway's
// soft deny or hold (intercept.WithoutForgedEnvelope): a byte scan, so
// that what cannot goes on undecoded.
func mayForgeEnvelope(b []byte) bool {
	return mayHoldMemberFold(b, errorMember) ||
		mayHoldMemberFold(b, structuredContentMember) && (bytes.Contains(b, deniedValue) || bytes.Contains(b, approvalValue) || bytes.Contains(b, unicodeEscape))
}

// cacheHinted reports whether b may hold SEP-2549's cache hints, which
// screenAnswer marks private (privateCache).
func cacheHinted(b []byte) bool {
	return mayHoldMember(b, cacheScopeMember) || mayHoldMember(b, ttlMember)
}

// listMethod reports whether answers to method are screened as lists:
// tools/list, tasks/list, and what an intercept.ListScreener screens
// (prompts/list, resources/list, resources/templates/list, and the
// instructions of initialize and server/discover). While one is pending
// an answer that cannot be decoded is refused rather than passed on.
func listMethod(method string) bool {
	switch method {
	case "tools/list", "tasks/list", "prompts/list", "resources/list", "resources/templates/list", "initialize", "server/discover":
		return true
	}
	return false
}

// recorded reports whether b, a message from an upstream, may hold
// something screenAnswer records: a task handle or a requestState.
func recorded(b []byte) bool {
	return mayHoldMemberFold(b, taskIDMember) || mayHoldMember(b, requestStateMember)
}

// mayHoldMemberFold is mayHoldMember for a name Go's encoding/json, with
// which mcp-go's and the go-sdk's clients read, takes in any case
// ("TaskId" and "TASKID" are taskId to them): quoted, an ASCII name, is
// looked for without regard to case. encoding/json folds as
// bytes.EqualFold, to which the long s (U+017F) is s and the Kelvin sign
// (U+212A) k: b holding either may hold the name too.
func mayHoldMemberFold(b, quoted []byte) bool {
	if mayHoldMember(b, quoted) || bytes.Contains(b, longS) || bytes.Contains(b, kelvinSign) {
		return true
	}
	for i := 0; ; {
		j := bytes.IndexByte(b[i:], '"')
		if j < 0 || i+j+len(quoted) > len(b) {
			return false
		}
		i += j
		if bytes.EqualFold(b[i:i+len(quoted)], quoted) {
			return true
		}
		i++
	}
}

// mayNeedScreen reports recorded(b) || cacheHinted(b) ||
// mayForgeEnvelope(b), whether an upstream's message may hold anything
// screenAnswer looks at, in one pass over b's quotes rather than a search
// of b for each name (and a pass over its quotes for each name read
// without regard to case): every answer an upstream sends takes this
// test before it is passed on.
func mayNeedScreen(b []byte) bool {
	if bytes.Contains(b, unicodeEscape) || bytes.Contains(b, longS) || bytes.Contains(b, kelvinSign) {
		return true
	}
	structured := false
	for i := 0; ; i++ {
		j := bytes.IndexByte(b[i:], '"')
		if j < 0 || i+j+1 >= len(b) {
			break
		}
		i += j
		at := b[i:]
		switch at[1] | 0x20 { // the name's first letter, in lower case
		case 't':
			if hasPrefixFold(at, taskIDMember) || bytes.HasPrefix(at, ttlMember) {
				return true
			}
		case 'r':
			if bytes.HasPrefix(at, requestStateMember) {
				return true
			}
		case 'c':
			if bytes.HasPrefix(at, cacheScopeMember) {
				return true
			}
		case 'e':
			if hasPrefixFold(at, errorMember) {
				return true
			}
		case 's':
			structured = structured || hasPrefixFold(at, structuredContentMember)
		}
	}
	return structured && (bytes.Contains(b, deniedValue) || bytes.Contains(b, approvalValue))
}

// hasPrefixFold reports whether b begins with quoted, an ASCII name in
// quotes, as bytes.EqualFold reads it.
func hasPrefixFold(b, quoted []byte) bool {
	return len(b) >= len(quoted) && bytes.EqualFold(b[:len(quoted)], quoted)
}

// mayHoldMember reports whether b, JSON text, may hold a member named
// quoted: written so, or with an escape in the text, which may spell it
// otherwise ("task\u0049d" is taskId to every reader, not to
// bytes.Contains).
func mayHoldMember(b, quoted []byte) bool {
	return bytes.Contains(b, quoted) || bytes.Contains(b, unicodeEscape)
}

// holdFunc offers m, about a task its client does not own, to a
// taskHold (see taskHold.hold).
type holdFunc func(m *intercept.Message) (held, owned bool)

var (
	taskIDMember            = []byte(`"taskId"`)
	requestStateMember      = []byte(`"requestState"`)
	cacheScopeMember        = []byte(`"cacheScope"`)
	ttlMember               = []byte(`"ttlMs"`)
	resultMember            = []byte(`"result"`)
	idMember                = []byte(`"id"`)
	errorMember             = []byte(`"error"`)
	structuredContentMember = []byte(`"structuredContent"`)
	deniedValue             = []byte(`"denied"`)
	approvalValue           = []byte(`"approval_required"`)
	unicodeEscape           = []byte(`\u`)
	longS                   = []byte("\u017f")
	kelvinSign              = []byte("\u212a")
)

// listRefused answers the list request id (of method; "" if unknown)
// with why its upstream's answer was not passed on.
func listRefused(id jsontext.Value, method string, err error) []byte {
	if method == "" {
		method = "list"
	}
	return intercept.ErrorResponse(id, &intercept.WireError{Code: intercept.CodeUpstreamError,
		Message: "the upstream's " + method + " answer was refused: " + err.Error() + " (what the gateway screens must be what the client is shown)"})
}

// hideTools applies screenAnswer to b, one JSON-RPC message or a batch
// from an upstream, for every response, with the method of the request
// methodOf says its id answers ("" for none), asked with the cursor it
// says (intercept.ListCursor; "" for none), and screenUpdate to every
// notification, and then leaves out every
// message about a task the client of cc does not own (w.withhold): the
// responses go first, so that a task a response creates is the client's
// before a message of the same batch about it is looked at. It returns b
// itself when nothing changed, nil when nothing is left. While lists
// names requests still waiting for a tools/list answer, b that cannot be
// decoded (duplicate member names, invalid UTF-8) is not passed on: the
// client, reading it its own way, could be shown tools the gateway never
// saw; those requests are answered with an error instead. A message
// about a task the client does not own is first offered to hold (nil:
// none), which may keep it for when its task is the client's (taskhold.go)
// or find it is the client's already. A request or notification the
// interceptor withholds (withholdUpstreamMessage) is left out too, a
// request answered to the upstream through refuse.
func hideTools(ctx context.Context, ic *intercept.Interceptor, w *withheldTasks, cc intercept.CallContext, b []byte, methodOf func(id string) (method, cursor string), lists []string, hold holdFunc, refuse func(m *intercept.Message, answer []byte)) []byte {
	msgs, batch, err := intercept.Decode(b)
	if err != nil {
		if len(lists) == 0 {
			if recorded(b) {
				// It may name a task the gateway could not read, which
				// the client's parser may read as another's (of two
				// taskIds, Go's and JavaScript's take the last): not
				// passed on unscreened.
				w.log.Warn("withheld an upstream message that may name a task and could not be decoded",
					"upstream", cc.Upstream, "agent", cc.Agent, "error", err)
				return nil
			}
			if mayUpdate(b) {
				// It may be a resource's update, which screenUpdate
				// could not read: not passed on unscreened.
				w.log.Warn("withheld an upstream message that may be a resource update and could not be decoded",
					"upstream", cc.Upstream, "agent", cc.Agent, "error", err)
				return nil
			}
			return b // not ours to judge: the client gets the bytes unchanged
		}
		out := make([]jsontext.Value, len(lists))
		for i, id := range lists {
			method, _ := methodOf(id)
			out[i] = listRefused(jsontext.Value(id), method, fmt.Errorf("an answer while it was pending was not valid JSON-RPC (%v)", err))
		}
		if len(out) == 1 {
			return out[0]
		}
		return marshalArray(out)
	}
	out := make([]jsontext.Value, len(msgs))
	changed := false
	for i, m := range msgs {
		out[i] = m.Raw
		switch m.Kind {
		case intercept.KindRequest:
			if withheld, _ := withholdUpstreamMessage(ic, cc, m, refuse); withheld {
				out[i], changed = nil, true
			}
		case intercept.KindResponse:
			method, cursor := methodOf(m.IDKey())
			if raw, ok := screenAnswer(ctx, ic, cc, method, cursor, m.ID, m.IDKey(), m.Raw, m.Result); ok {
				out[i], changed = raw, true
			}
		case intercept.KindError:
			method, _ := methodOf(m.IDKey())
			if raw, ok := screenError(ic, cc, method, m.ID, m.IDKey(), m.Raw, m.Error); ok {
				out[i], changed = raw, true
			}
		case intercept.KindNotification:
			if withheld, instead := withholdUpstreamMessage(ic, cc, m, refuse); withheld {
				out[i], changed = instead, true
			} else if raw, ok := screenUpdate(ctx, ic, w, cc, m, m.Raw); ok {
				out[i], changed = raw, true
			}
		}
	}
	kept := out[:0]
	for i, m := range msgs {
		if out[i] == nil {
			continue // withheld, or an update of a resource the client may not read
		}
		if ic.ForeignTask(ctx, cc, m) {
			held, owned := false, false
			if hold != nil {
				held, owned = hold(m)
			}
			if !owned {
				if !held {
					w.drop(cc, m)
				}
				changed = true
				continue
			}
		}
		kept = append(kept, out[i])
	}
	switch {
	case !changed:
		return b
	case len(kept) == 0:
		return nil
	case batch:
		return marshalArray(kept)
	}
	return kept[0]
}

// filter hides tools in b, a message of the upstream's answer, before it
// is passed on, and leaves out messages about another's task (nil: none
// is left); lists has recorded the unfiltered b already.
func (o *observer) filter(ctx context.Context, b []byte) []byte {
	if !o.waitsForList() && !o.screensResults() && !mayNeedScreen(b) && !mayShowUpstream(o.g.ic, b) && !mayUpdate(b) {
		return b
	}
	var lists []string
	for id, m := range o.pending {
		if listMethod(m) && !o.answered[id] {
			lists = append(lists, id)
		}
	}
	if len(lists) > 0 && o.stray(b) {
		// A client may take its POST's answer whatever the id says
		// (mcp-go does): a list under an id the gateway did not send
		// would be shown unread. (With none waiting, a stray has no list
		// to answer: on an event stream it was withheld already, a stray
		// error elsewhere passes as on any stream, and an empty batch
		// would be no message at all.)
		slices.Sort(lists)
		out := make([]jsontext.Value, len(lists))
		for i, id := range lists {
			out[i] = listRefused(jsontext.Value(id), o.pending[id], errors.New("the answer carried a response to an id it was not asked"))
		}
		if len(out) == 1 {
			return out[0]
		}
		return marshalArray(out)
	}
	return hideTools(ctx, o.g.ic, o.g.withheld, o.cc, b, func(id string) (string, string) { return o.pending[id], o.cursors[id] }, lists, o.holdTask(ctx), o.refuse)
}

// stray reports whether b, a message of an upstream's answer, holds a
// response to an id that is not pending.
func (o *observer) stray(b []byte) bool {
	msgs, err := o.decode(b)
	if err != nil {
		return false // hideTools refuses it
	}
	for _, m := range msgs {
		if m.Kind == intercept.KindResponse || m.Kind == intercept.KindError {
			if _, ok := o.pending[m.IDKey()]; !ok {
				return true
			}
		}
	}
	return false
}

// strayResult reports whether msgs, an upstream's answer, hold a result
// for an id that is not pending.
func (o *observer) strayResult(msgs []*intercept.Message) bool {
	for _, m := range msgs {
		if _, ok := o.pending[m.IDKey()]; !ok && m.Kind == intercept.KindResponse {
			return true
		}
	}
	return false
}

// listWaiting reports whether a list request of o is still waiting for
// its answer.
func (o *observer) listWaiting() bool {
	for id, m := range o.pending {
		if listMethod(m) && !o.answered[id] {
			return true
		}
	}
	return false
}

func (o *observer) waitsForList() bool {
	for _, m := range o.pending {
		if listMethod(m) {
			return true
		}
	}
	return false
}

// screensResults reports whether a request of o waits for an action's
// result the interceptor may withhold.
func (o *observer) screensResults() bool {
	for _, m := range o.pending {
		if o.g.ic.WithholdsResults(m) {
			return true
		}
	}
	return false
}

// screenUnread returns the answer to o's requests when b, the upstream's
// answer to them with a failing status, is not JSON-RPC the gateway reads
// and the interceptor withholds it, read whole as text, as an action's
// error: each request gets the error saying why. Nil passes b on.
func (o *observer) screenUnread(b []byte) []byte {
	text, _ := jsontext.AppendQuote(nil, b) // invalid UTF-8 replaced
	ids := slices.Sorted(maps.Keys(o.pending))
	// One text, screened once (the first request whose answer is
	// screened names the action), not once per request of a batch.
	i := slices.IndexFunc(ids, func(id string) bool {
		m := o.pending[id]
		return o.g.ic.ScreensErrors() && (m == "" || o.g.ic.WithholdsResults(m))
	})
	if i < 0 {
		return nil
	}
	withheld, ok := o.g.ic.ScreenError(o.cc, o.pending[ids[i]], jsontext.Value(ids[i]), ids[i], b, text)
	if !ok {
		return nil
	}
	out := make([]jsontext.Value, 0, len(ids))
	for _, id := range ids {
		if m, err := intercept.WithMember(withheld, "id", jsontext.Value(id)); err == nil {
			out = append(out, m)
		}
	}
	if len(out) == 1 {
		return out[0]
	}
	return marshalArray(out)
}

// hideTools hides tools in b, a message from the upstream, before it is
// written to the client, and leaves out messages about another's task
// (nil: none is left); observe then sees the unfiltered b.
func (r *relay) hideTools(ctx context.Context, b []byte) []byte {
	r.mu.Lock()
	var lists []string
	results := false // an action's result the interceptor may withhold
	for id, m := range r.pending {
		if listMethod(m) {
			lists = append(lists, id)
		}
		results = results || r.ic.WithholdsResults(m)
	}
	r.mu.Unlock()
	if len(lists) == 0 && !results && !mayNeedScreen(b) && !mayShowUpstream(r.ic, b) && !mayUpdate(b) {
		return b
	}
	cc := r.callContext()
	return hideTools(ctx, r.ic, r.withheld, cc, b, func(id string) (string, string) {
		r.mu.Lock()
		defer r.mu.Unlock()
		return r.pending[id], r.cursors[id]
	}, lists, func(m *intercept.Message) (held, owned bool) {
		return r.tasks.hold(ctx, cc, m, m.Raw, r.sink)
	}, func(m *intercept.Message, answer []byte) {
		// Remembered as asked when it came (received): the client's
		// answer to it would go on too.
		r.asked.take(m.IDKey())
		r.refusals.send(r.log, r.up.Name, func() { _ = r.toUpstream(ctx, answer) })
	})
}

// refuse answers a request of the upstream's that filter withheld from
// the client: on its own, as the client's answer would go.
func (o *observer) refuse(_ *intercept.Message, answer []byte) {
	if o.rt.url == nil {
		return // a bridged upstream's messages are not filtered here
	}
	o.rt.refusals.send(o.g.log, o.rt.up.Name, func() { o.g.answerUpstream(o.rt, o.sess, answer) })
}

// listCursors maps the ids of the tools/list requests among msgs asked
// with a cursor to it (intercept.ListCursor); nil for none.
func listCursors(msgs []*intercept.Message) map[string]string {
	var out map[string]string
	for _, m := range msgs {
		if m.Kind != intercept.KindRequest || m.Method != "tools/list" {
			continue
		}
		if c := intercept.ListCursor(m); c != "" {
			if out == nil {
				out = make(map[string]string, 1)
			}
			out[m.IDKey()] = c
		}
	}
	return out
}
