package policy

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"

	"cel.dev/cel-go/cel"
	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/common/types/ref"
	"cel.dev/cel-go/ext"
	"cel.dev/cel-go/interpreter"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/sluicehq/sluice/intercept"
)

// A rule's `when` is a CEL expression, type-checked and planned at load
// time. It sees:
//
//	args            map(string, dyn)  the tool arguments, decoded from JSON
//	tool            string            the tool name (NFC)
//	upstream        string            the upstream the call is bound for
//	agent           string            the calling agent
//	session         string            the session id
//	classes         list(string)      the tool's classes
//	classification  map(string, dyn)  the classifier's advice (descriptor.Classification); empty without one
//	principal       map(string, dyn)  the authenticated caller: id, method (api_key, jwt, mtls),
//	                                  client_name and claims (a JWT's claims, map(string, dyn));
//	                                  without authentication id and method are "" and claims is empty
//
// Arguments are decoded strictly: duplicate object names and invalid UTF-8
// are errors (an upstream might read the other duplicate), escapes such as
// \u0031 are decoded before the condition sees the value, integers that fit
// in int64 are ints and other numbers doubles, and ints and doubles compare
// with each other. A value of the wrong type is a runtime error, not false:
// `args.amount > 1000` with amount "1001" (a string), a missing amount, or
// amount {"value": 5000} all fail, and a failing condition denies the call
// with policy_error. A condition that must tolerate such input says so,
// e.g. `has(args.amount) && type(args.amount) == int && args.amount > 1000`.

// DefaultCostLimit is the CEL cost limit of a condition when
// Options.CostLimit is zero. A condition that exceeds it (say by iterating
// over a huge argument list) fails, which denies the call.
const DefaultCostLimit = 100_000

func newCELEnv() (*cel.Env, error) {
	return cel.NewEnv(
		cel.Variable("args", cel.MapType(cel.StringType, cel.DynType)),
		cel.Variable("tool", cel.StringType),
		cel.Variable("upstream", cel.StringType),
		cel.Variable("agent", cel.StringType),
		cel.Variable("session", cel.StringType),
		cel.Variable("classes", cel.ListType(cel.StringType)),
		cel.Variable("classification", cel.MapType(cel.StringType, cel.DynType)),
		cel.Variable("principal", cel.MapType(cel.StringType, cel.DynType)),
		cel.CrossTypeNumericComparisons(true),
		ext.Strings(),
	)
}

// condition is a compiled `when`.
type condition struct {
	src string
	prg cel.Program
	// classification: the condition reads classification.*.
	classification bool
	// args: the condition reads the call's arguments.
	args bool
	// static: the condition reads only what a tools/list request already
	// tells (tool, upstream, agent, classes, principal), so Visible can
	// decide it for the whole tool.
	static bool
}

// ClassificationWithheld, set to true in a descriptor's Classification,
// says the classifier's attributes were withheld on purpose (RFC-010
// §12.3's re-evaluation): conditions that read classification.* then do
// not hold, instead of failing with policy_error.
const ClassificationWithheld = "sluice.withheld"

func compileCondition(env *cel.Env, src string, costLimit uint64) (*condition, error) {
	ast, iss := env.Compile(src)
	if iss.Err() != nil {
		return nil, iss.Err()
	}
	if t := ast.OutputType(); !t.IsExactType(cel.BoolType) {
		hint := ""
		if t.IsExactType(cel.DynType) {
			hint = " (compare explicitly, e.g. `args.flag == true`)"
		}
		return nil, fmt.Errorf("the condition returns %s, not bool%s", t, hint)
	}
	prg, err := env.Program(ast,
		cel.CostLimit(costLimit),
		cel.InterruptCheckFrequency(100),
		cel.EvalOptions(cel.OptOptimize),
	)
	if err != nil {
		return nil, err
	}
	c := &condition{src: src, prg: prg, static: true}
	for _, ref := range ast.NativeRep().ReferenceMap() {
		switch ref.Name {
		case "classification":
			c.classification = true
		case "args":
			c.args = true
		}
		switch ref.Name {
		case "tool", "upstream", "agent", "classes", "principal":
		case "":
			// A function or operator.
		default:
			c.static = false
		}
	}
	return c, nil
}

// activation resolves the variables of one evaluation.
type activation struct {
	args                           map[string]any
	tool, upstream, agent, session string
	classes                        []string
	classification                 map[string]any
	principal                      *intercept.Principal
	// clientName is the name the authenticated client gave itself
	// (the descriptor's ClientName), principal.client_name.
	clientName string
}

var emptyMap = map[string]any{}

func (a *activation) ResolveName(name string) (any, bool) {
	switch name {
	case "args":
		return a.args, true
	case "tool":
		return a.tool, true
	case "upstream":
		return a.upstream, true
	case "agent":
		return a.agent, true
	case "session":
		return a.session, true
	case "classes":
		if a.classes == nil {
			return []string{}, true
		}
		return a.classes, true
	case "classification":
		if a.classification == nil {
			return emptyMap, true
		}
		return a.classification, true
	case "principal":
		return principalVar(a.principal, a.clientName), true
	}
	return nil, false
}

func (a *activation) Parent() interpreter.Activation { return nil }

// principalVar is the principal variable of a condition: its keys are
// always there, empty without authentication, so `principal.method ==
// "jwt"` is false rather than an error when no one authenticated.
func principalVar(p *intercept.Principal, clientName string) map[string]any {
	if p == nil {
		return map[string]any{"id": "", "method": "", "client_name": "", "claims": emptyMap}
	}
	claims := p.Claims
	if claims == nil {
		claims = emptyMap
	}
	if clientName == "" {
		clientName = p.ClientName
	}
	return map[string]any{"id": p.ID, "method": p.Method, "client_name": clientName, "claims": claims}
}

func (c *condition) eval(ctx context.Context, a *activation) (bool, error) {
	var out ref.Val
	var err error
	if ctx.Done() == nil {
		out, _, err = c.prg.Eval(a) // nothing to interrupt for
	} else {
		out, _, err = c.prg.ContextEval(ctx, a)
	}
	if err != nil {
		return false, err
	}
	if types.IsError(out) {
		return false, fmt.Errorf("%v", out)
	}
	b, ok := out.Value().(bool)
	if !ok {
		return false, fmt.Errorf("the condition returned %v, not a bool", out.Type())
	}
	return b, nil
}

// errArgs is the error of arguments that are not a JSON object.
var errArgs = errors.New("the tool arguments are not a JSON object")

// decodeArgs decodes tool arguments for conditions. Absent or null
// arguments are an empty object.
func decodeArgs(raw jsontext.Value) (map[string]any, error) {
	if len(raw) == 0 {
		return map[string]any{}, nil
	}
	ad := argDecoders.Get().(*argDecoder)
	defer argDecoders.Put(ad)
	ad.r.Reset(raw)
	ad.dec.Reset(&ad.r)
	defer ad.r.Reset(nil) // do not keep the arguments alive in the pool
	dec := ad.dec
	v, err := decodeValue(dec, 0)
	if err != nil {
		return nil, fmt.Errorf("the tool arguments cannot be read: %w", err)
	}
	if why, bad := intercept.CaseVariant(raw, nil); bad {
		// A Go upstream matches member names case-insensitively: a
		// condition on "amount" must not pass while it reads "AMOUNT".
		return nil, fmt.Errorf("the tool arguments cannot be read: %s", why)
	}
	if _, err := dec.ReadToken(); err == nil {
		return nil, fmt.Errorf("the tool arguments cannot be read: data after the value")
	}
	switch v := v.(type) {
	case map[string]any:
		return v, nil
	case nil:
		return map[string]any{}, nil
	}
	return nil, errArgs
}

// argDecoder is a reusable JSON decoder for tool arguments; a decoder's
// buffers are most of the cost of a small argument object.
type argDecoder struct {
	r   bytes.Reader
	dec *jsontext.Decoder
}

var argDecoders = sync.Pool{New: func() any {
	ad := new(argDecoder)
	ad.dec = jsontext.NewDecoder(&ad.r)
	return ad
}}

// maxArgDepth bounds the nesting of arguments a condition will look at.
const maxArgDepth = 64

func decodeValue(dec *jsontext.Decoder, depth int) (any, error) {
	if depth > maxArgDepth {
		return nil, fmt.Errorf("nested deeper than %d", maxArgDepth)
	}
	tok, err := dec.ReadToken()
	if err != nil {
		return nil, err
	}
	switch tok.Kind() {
	case 'n':
		return nil, nil
	case 't', 'f':
		return tok.Bool(), nil
	case '"':
		return tok.String(), nil
	case '0':
		if i, err := tok.Int(); err == nil {
			return i, nil
		}
		return tok.Float()
	case '{':
		m := map[string]any{}
		for dec.PeekKind() != '}' {
			k, err := dec.ReadToken()
			if err != nil {
				return nil, err
			}
			name := k.String() // before the next read voids k
			v, err := decodeValue(dec, depth+1)
			if err != nil {
				return nil, err
			}
			m[name] = v
		}
		if _, err := dec.ReadToken(); err != nil {
			return nil, err
		}
		return m, nil
	case '[':
		l := []any{}
		for dec.PeekKind() != ']' {
			v, err := decodeValue(dec, depth+1)
			if err != nil {
				return nil, err
			}
			l = append(l, v)
		}
		if _, err := dec.ReadToken(); err != nil {
			return nil, err
		}
		return l, nil
	}
	return nil, fmt.Errorf("unexpected %v", tok.Kind())
}
