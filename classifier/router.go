package classifier

import (
	"strings"

	"github.com/go-json-experiment/json/jsontext"
)

// routerKeys are the parameters through which one tool offers many
// operations ("azure" with {"command": "acr_registry_list"}, a "manage_x"
// tool with {"action": "delete"}): the operation named in the call is what
// the call does, whatever the tool's name says.
var routerKeys = wordSet("command", "action", "operation", "op", "subcommand", "intent", "method", "cmd", "tool", "mode", "verb")

// routerWords returns the words of the router parameters of a call's
// top-level arguments that hold a short string: op, the operation named
// ("command", "action"), and intent, a free-text "intent" beside it. cli
// reports that op is a single subcommand identifier ("acr_registry_list",
// no spaces, several words): CLIs name the group first and the verb last.
func routerWords(params jsontext.Value) (op, intent []string, cli bool) {
	if len(params) == 0 || params[0] != '{' {
		return nil, nil, false
	}
	d := jsontext.NewDecoder(strings.NewReader(string(params)))
	if tok, err := d.ReadToken(); err != nil || tok.Kind() != '{' {
		return nil, nil, false
	}
	for d.PeekKind() != '}' {
		name, err := d.ReadToken()
		if err != nil {
			break
		}
		key := strings.ToLower(name.String())
		if routerKeys[key] && d.PeekKind() == '"' {
			v, err := d.ReadToken()
			if err != nil {
				break
			}
			if s := v.String(); len(s) <= 120 && s != "" {
				switch {
				case key == "intent":
					if intent == nil {
						intent = words(nil, s)
					}
				case op == nil:
					op = words(nil, s)
					cli = (key == "command" || key == "subcommand" || key == "cmd") && len(op) >= 2 && !strings.ContainsAny(s, " \t\n")
				}
			}
			continue
		}
		if err := d.SkipValue(); err != nil {
			break
		}
	}
	return op, intent, cli
}
