package intercept

import (
	"bytes"
	"strings"

	"github.com/go-json-experiment/json/jsontext"
)

// A ListScreener is an Observer that also screens what an upstream shows
// the model besides its tools: the prompts, resources and resource
// templates it lists, and the instructions of its initialize (and
// 2026-07-28 server/discover) result. Implementations must not block.
type ListScreener interface {
	// ScreenListed reports, for each element of the prompts, resources
	// or resourceTemplates of a prompts/list, resources/list or
	// resources/templates/list result (method) of upstream, whether it
	// may be shown to the client.
	ScreenListed(upstream, method string, items []jsontext.Value) (show []bool)
	// ScreenInstructions reports whether the instructions of an
	// initialize or server/discover result (method) of upstream may be
	// shown to the client.
	ScreenInstructions(upstream, method, instructions string) (show bool)
}

// listMembers are the members of a list result that a ListScreener
// screens, by method.
var listMembers = map[string]string{
	"prompts/list":             "prompts",
	"resources/list":           "resources",
	"resources/templates/list": "resourceTemplates",
}

// ScreensList reports whether ScreenListResult may change the results of
// method: prompts/list, resources/list, resources/templates/list,
// initialize and server/discover, when the Observer is a ListScreener.
func (i *Interceptor) ScreensList(method string) bool {
	if _, ok := i.Observer.(ListScreener); !ok {
		return false
	}
	_, listed := listMembers[method]
	return listed || method == "initialize" || method == "server/discover"
}

// ScreenListResult returns result, the result of a method request
// answered by the upstream of cc (see ScreensList), as the client may see
// it: without the listed items the Observer (a ListScreener) withholds,
// and without instructions it withholds. Members are matched whatever
// their case ("Prompts", "Instructions"), as a client reading them with
// Go's encoding/json would. Every other member stays byte for byte as it
// was. changed is false, and out is result itself, when nothing was left
// out. A result that cannot be read is returned as it is: the transports
// refuse what they cannot decode while a list is pending.
func (i *Interceptor) ScreenListResult(cc CallContext, method string, result jsontext.Value) (out jsontext.Value, changed bool) {
	ls, ok := i.Observer.(ListScreener)
	if !ok || result.Kind() != '{' {
		return result, false
	}
	member, listed := listMembers[method]
	if !listed {
		if method != "initialize" && method != "server/discover" {
			return result, false
		}
		member = "instructions"
	}
	var keys []string
	var vals []jsontext.Value
	if eachMember(result, func(k string, v jsontext.Value) error {
		if strings.EqualFold(k, member) {
			keys, vals = append(keys, k), append(vals, v)
		}
		return nil
	}) != nil {
		return result, false
	}
	// What is withheld is gathered first and the result rewritten once:
	// rewriting it for each member (there may be as many as the member's
	// name has spellings, 131,072 of resourceTemplates) cost their
	// number times the result.
	var repl map[string]jsontext.Value // a key's new value, nil to remove it
	for n, k := range keys {
		v := vals[n]
		if !listed {
			if v.Kind() == '"' && !ls.ScreenInstructions(cc.Upstream, method, unquote(v)) {
				if repl == nil {
					repl = map[string]jsontext.Value{}
				}
				repl[k] = nil
			}
			continue
		}
		if v.Kind() != '[' {
			continue
		}
		var items []jsontext.Value
		if eachElement(v, func(it jsontext.Value) error { items = append(items, it); return nil }) != nil {
			continue
		}
		show := ls.ScreenListed(cc.Upstream, method, items)
		var kept bytes.Buffer
		kept.WriteByte('[')
		dropped := false
		for j, it := range items {
			if j < len(show) && !show[j] {
				dropped = true
				continue
			}
			if kept.Len() > 1 {
				kept.WriteByte(',')
			}
			kept.Write(it)
		}
		if !dropped {
			continue
		}
		kept.WriteByte(']')
		if repl == nil {
			repl = map[string]jsontext.Value{}
		}
		repl[k] = kept.Bytes()
	}
	if repl == nil {
		return result, false
	}
	out, err := rewriteMembers(result, repl)
	if err != nil {
		return result, false
	}
	return out, true
}

// A ToolScreener is an Observer that also decides which version of each
// tool of a tools/list answer the client is shown: the inventory shows a
// tool as the operator approved it, not as the upstream changed it since.
// Implementations must not block.
type ToolScreener interface {
	// ScreenTools returns, for each element of the tools of a tools/list
	// result of upstream (already passed to ObserveTools), the element to
	// show in its place: itself, another (the approved version), or nil to
	// leave it out. A result shorter than tools keeps the rest as they are.
	ScreenTools(upstream string, tools []jsontext.Value) []jsontext.Value
}

// ScreenToolsResult returns result, a tools/list result answered by the
// upstream of cc and recorded with ObserveTools, with each tool as the
// Observer (a ToolScreener) lets the client see it. Every other member
// stays byte for byte as it was; changed is false, and out is result
// itself, when no tool was replaced or left out. A result whose tools
// cannot be read is an error (the transports refuse such an answer):
// what the client would make of it is not known.
func (i *Interceptor) ScreenToolsResult(cc CallContext, result jsontext.Value) (out jsontext.Value, changed bool, err error) {
	ts, ok := i.Observer.(ToolScreener)
	if !ok {
		return result, false, nil
	}
	tools := Member(result, "tools")
	if tools.Kind() != '[' {
		return result, false, nil
	}
	var items []jsontext.Value
	if err := eachElement(tools, func(it jsontext.Value) error { items = append(items, it); return nil }); err != nil {
		return nil, true, err
	}
	shown := ts.ScreenTools(cc.Upstream, items)
	var kept bytes.Buffer
	kept.Grow(len(tools))
	kept.WriteByte('[')
	for j, it := range items {
		if j < len(shown) {
			if !bytes.Equal(shown[j], it) {
				changed = true
			}
			it = shown[j]
		}
		if it == nil {
			continue
		}
		if kept.Len() > 1 {
			kept.WriteByte(',')
		}
		kept.Write(it)
	}
	if !changed {
		return result, false, nil
	}
	kept.WriteByte(']')
	out, err = WithMember(result, "tools", kept.Bytes())
	if err != nil {
		return nil, true, err
	}
	return out, true, nil
}
