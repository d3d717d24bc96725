package inventory

import (
	"github.com/go-json-experiment/json/jsontext"
)

// ScreenTools implements intercept.ToolScreener: of the tools of a
// tools/list result of upstream, already observed, the client is shown
// what the operator approved. With DriftBlock, on a pinned upstream a tool
// identical to its pinned version is shown as sent, a tool that differs
// from it (description, title, schemas, annotations, icons, execution,
// _meta, members MCP does not define) is shown as pinned, and a tool outside the pin, or one that
// cannot be read, is left out; on an upstream whose calls are all blocked
// (a pin that failed verification, or manual pinning before the pin)
// every tool is left out. Calls of such tools are blocked (Blocked) until
// approved; showing their new text meanwhile would hand the model the
// payload of a rug pull, which it can follow with the tools still
// allowed. Nothing changes with DriftWarn, or on an upstream without a
// pin yet under PinFirstSeen (its first complete list is the pin).
func (inv *Inventory) ScreenTools(upstream string, tools []jsontext.Value) []jsontext.Value {
	if inv.onDrift != DriftBlock {
		return tools
	}
	u := inv.view.Load().ups[upstream]
	switch {
	case u == nil:
		return tools
	case u.blockAll != "":
		return make([]jsontext.Value, len(tools))
	case u.pinned == nil:
		return tools
	}
	out := make([]jsontext.Value, len(tools))
	for i, it := range tools {
		p, err := parsePage(jsontext.Value(`{"tools":[` + string(it) + `]}`))
		if err != nil || len(p.Tools) != 1 {
			continue
		}
		t := p.Tools[0]
		pinned, ok := u.pinned.Tool(t.Name)
		switch {
		case !ok:
		case matches(pinned, t):
			out[i] = it
		default:
			if b, err := pinned.wire(); err == nil {
				out[i] = b
			}
		}
	}
	return out
}
