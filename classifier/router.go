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

// routerWords returns the words of the first router parameter of a call's
// top-level arguments that holds a short string, nil if there is none.
func routerWords(dst []string, params jsontext.Value) []string {
	if len(params) == 0 || params[0] != '{' {
		return dst
	}
	d := jsontext.NewDecoder(strings.NewReader(string(params)))
	if tok, err := d.ReadToken(); err != nil || tok.Kind() != '{' {
		return dst
	}
	for d.PeekKind() != '}' {
		name, err := d.ReadToken()
		if err != nil {
			return dst
		}
		if routerKeys[strings.ToLower(name.String())] && d.PeekKind() == '"' {
			v, err := d.ReadToken()
			if err != nil {
				return dst
			}
			if s := v.String(); len(s) <= 120 {
				return words(dst, s)
			}
			continue
		}
		if err := d.SkipValue(); err != nil {
			return dst
		}
	}
	return dst
}
