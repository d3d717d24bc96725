package policy

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"

	"cel.dev/cel-go/cel"
	"cel.dev/cel-go/common/ast"
	"cel.dev/cel-go/common/operators"
	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/common/types/ref"
	"cel.dev/cel-go/common/types/traits"
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
//	agent           string            the calling agent (NFC, as its manifest and route memory know it)
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
// in int64 are ints, larger ones that fit in uint64 uints, and other
// numbers doubles, and ints, uints and doubles compare with each other.
// A value of the wrong type is a runtime error, not false:
// `args.amount > 1000` with amount "1001" (a string), a missing amount, or
// amount {"value": 5000} all fail, and a failing condition denies the call
// with policy_error. So do ==, != and in between values of different
// types (numbers apart), which CEL would call unequal: `args.force == true`
// with force "true" or 1 (mcp-go's GetBool reads both as true), `args.to ==
// "x"` with to ["x"], `args.c in ["BTC"]` with c null; only a comparison
// with the literal null asks about null and compares anything. A condition
// that must tolerate such input says so, e.g. `has(args.amount) &&
// type(args.amount) in [int, uint, double] && args.amount > 1000` (with
// only int, a deny rule lets 5000.5 and 10000000000000000000 through,
// which an upstream reads as numbers all the same). And since a Go upstream
// matches member names case-insensitively, arguments holding a name that
// differs only in case from one the condition reads (PATH where it reads
// args.path) make it fail too, whether or not the name itself is there —
// also a key it tests while iterating an object (TargetDir where it asks
// args.exists(k, k == "targetDir"); see keys.go). Arguments must be one
// JSON value: anything after it but white space fails.
//
// Besides CEL's standard functions and the strings extension, a condition
// may call path_clean, url_host and email_domain (see funcs.go) to compare
// a path, a URL's host or an address's domain as the upstream reads them.

// DefaultCostLimit is the CEL cost limit of a condition when
// Options.CostLimit is zero. A condition that exceeds it (say by iterating
// over a huge argument list) fails, which denies the call. A matches is
// charged by its regex's program size, before it runs (regexcost.go).
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
		celFuncs(),
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
	// reads are the member names the condition reads (see readNames).
	reads *readSet
	// costLimit is the condition's CEL cost limit, which the test of
	// its arguments' keys before it runs is charged to as well.
	costLimit uint64
	// numberTypes are the number types (int, uint, double) the condition
	// names as values, as a type guard does: type(args.x) in [int, double].
	numberTypes []string
}

// numberTypes returns the number types a condition names as types, in
// the order int, uint, double.
func numberTypes(a *ast.AST) []string {
	named := map[string]bool{}
	ast.PostOrderVisit(a.Expr(), ast.NewExprVisitor(func(e ast.Expr) {
		if e.Kind() == ast.IdentKind {
			named[e.AsIdent()] = true
		}
	}))
	var ts []string
	for _, t := range [...]string{"int", "uint", "double"} {
		if named[t] {
			ts = append(ts, t)
		}
	}
	return ts
}

// readSet is the member names a condition reads: where in args (at: the
// path of the object holding each name, "" for args itself, members
// joined by NUL), and those read through something else, such as a
// comprehension's variable (anywhere: they may be in any object). keys
// and anyKeys are how a condition tests the keys of objects it iterates
// (args.exists(k, k == "targetDir")): at a path, or in any object.
type readSet struct {
	at       map[string][]string // path of the holding object -> names read there
	inner    map[string]bool     // paths of the objects on the way to a name
	anywhere map[string]bool
	keys     map[string][]keyTest // path of an iterated object -> tests of its keys
	anyKeys  []keyTest
}

// readNames returns the member names a condition reads — by field
// selection (args.path, has(args.opts.force), x.path in a comprehension),
// constant index (args["path"]), `"path" in args`, or a comprehension
// over a list of names (["path", "dest"].exists(n, n in args)) — and how
// it tests the keys of the objects it iterates (see keys.go); those of
// principal and classification, which the gateway builds, are left out.
// nil: none.
func readNames(a *ast.AST) *readSet {
	b := &readBuilder{a: a}
	ast.PostOrderVisit(a.Expr(), ast.NewExprVisitor(func(e ast.Expr) {
		switch e.Kind() {
		case ast.LiteralKind:
			if s, ok := e.AsLiteral().Value().(string); ok && s != "" {
				b.lits = append(b.lits, s)
			}
		case ast.SelectKind:
			b.add(e.AsSelect().FieldName(), e.AsSelect().Operand())
		case ast.ComprehensionKind:
			b.comprehension(e.AsComprehension())
		case ast.CallKind:
			c := e.AsCall()
			if len(c.Args()) != 2 {
				return
			}
			switch c.FunctionName() {
			case operators.Index, operators.OptIndex, operators.OptSelect:
				if name, ok := stringLit(c.Args()[1]); ok {
					b.add(name, c.Args()[0])
				}
			case operators.In:
				if name, ok := stringLit(c.Args()[0]); ok {
					b.add(name, c.Args()[1])
				}
			}
		}
	}))
	b.finish()
	return b.rs
}

// readBuilder collects a readSet.
type readBuilder struct {
	a    *ast.AST
	rs   *readSet
	lits []string // every string literal of the condition
	// opaque are the iterated objects whose keys the condition uses in
	// ways keyUses does not follow: path, or anyPath for any object.
	opaque []string
}

func (b *readBuilder) set() *readSet {
	if b.rs == nil {
		b.rs = &readSet{at: map[string][]string{}, inner: map[string]bool{}, anywhere: map[string]bool{}, keys: map[string][]keyTest{}}
	}
	return b.rs
}

// anyPath stands for "any object" where a path is expected.
const anyPath = "\x01"

// argsPath returns the path in args of the value operand denotes, or
// anyPath when no path names it (an element, a computed key, a
// comprehension's variable, a function's result); ok is false for the
// values the gateway builds, principal and classification.
func argsPath(operand ast.Expr) (at string, ok bool) {
	var path []string // from args to the value, reversed
	for {
		switch operand.Kind() {
		case ast.SelectKind:
			path = append(path, operand.AsSelect().FieldName())
			operand = operand.AsSelect().Operand()
			continue
		case ast.CallKind:
			if c := operand.AsCall(); (c.FunctionName() == operators.Index || c.FunctionName() == operators.OptIndex || c.FunctionName() == operators.OptSelect) && len(c.Args()) == 2 {
				k, ok := stringLit(c.Args()[1])
				if !ok {
					k = anyPath
				}
				path = append(path, k)
				operand = c.Args()[0]
				continue
			}
		case ast.IdentKind:
			switch operand.AsIdent() {
			case "principal", "classification":
				return "", false
			case "args":
				if slices.Contains(path, anyPath) {
					return anyPath, true
				}
				slices.Reverse(path)
				return strings.Join(path, "\x00"), true
			}
		}
		return anyPath, true
	}
}

// add records that the condition reads name in the object operand.
func (b *readBuilder) add(name string, operand ast.Expr) {
	at, ok := argsPath(operand)
	if !ok {
		return
	}
	rs := b.set()
	if at == anyPath {
		rs.anywhere[name] = true
		return
	}
	rs.at[at] = append(rs.at[at], name)
	b.inner(at)
}

// inner marks the objects on the way to the object at path at.
func (b *readBuilder) inner(at string) {
	if at == "" {
		return
	}
	for i := range len(at) {
		if at[i] == 0 {
			b.rs.inner[at[:i]] = true
		}
	}
	b.rs.inner[at] = true
}

// caseVariant returns an error when args holds, where the condition reads
// a member, a name that differs from it only in case (strings.EqualFold,
// as encoding/json matches names to fields): a Go upstream would read it
// as that name. Only the objects on the condition's paths count (a
// condition on args.path is not about an env map's PATH), and every
// object for the names read through a comprehension's variable.
func (c *condition) caseVariant(args any) error {
	left := c.costLimit
	return c.reads.variant(args, "", true, &left)
}

// variant is caseVariant below at; the tests of keys are charged to
// left (keyTest.charge).
func (rs *readSet) variant(v any, at string, known bool, left *uint64) error {
	if !known && len(rs.anywhere) == 0 && len(rs.anyKeys) == 0 {
		// Nothing read here or below: not walked (once per rule, on
		// arguments the agent chooses).
		return nil
	}
	switch v := v.(type) {
	case map[string]any:
		var names []string
		var keys []keyTest
		if known {
			names, keys = rs.at[at], rs.keys[at]
		}
		for k, x := range v {
			for i := range keys {
				if err := keys[i].charge(k, left); err != nil {
					return err
				}
				if keys[i].passesOver(k) {
					return keyVariantErr(k, &keys[i])
				}
			}
			for i := range rs.anyKeys {
				if err := rs.anyKeys[i].charge(k, left); err != nil {
					return err
				}
				if rs.anyKeys[i].passesOver(k) {
					return keyVariantErr(k, &rs.anyKeys[i])
				}
			}
			for _, n := range names {
				if k != n && strings.EqualFold(k, n) {
					return variantErr(k, n)
				}
			}
			for n := range rs.anywhere {
				if k != n && strings.EqualFold(k, n) {
					return variantErr(k, n)
				}
			}
			// The path is made only where it is looked up: below a
			// path no name is read at, it is not, and making it for
			// every member copied the (agent-chosen) names above it.
			p, inner := "", false
			if known {
				p = k
				if at != "" {
					p = at + "\x00" + k
				}
				inner = rs.inner[p]
			}
			if err := rs.variant(x, p, inner, left); err != nil {
				return err
			}
		}
	case []any:
		for _, x := range v {
			if err := rs.variant(x, at, false, left); err != nil {
				return err
			}
		}
	}
	return nil
}

func variantErr(k, n string) error {
	return fmt.Errorf("the tool arguments cannot be read: member %q differs from %q, which the condition reads, only in case", k, n)
}

// strictEquality is a CEL decorator: ==, != and in between values of
// different types (int, uint and double are one) are an error rather than
// false, unless one side of == or != is the literal null.
func strictEquality(i interpreter.InterpretableV2) (interpreter.InterpretableV2, error) {
	call, ok := i.(interpreter.InterpretableCall)
	if !ok {
		return i, nil
	}
	switch call.Function() {
	case operators.Equals, operators.NotEquals, operators.In:
	default:
		return i, nil
	}
	args := call.Args()
	if len(args) != 2 {
		return i, nil
	}
	s := &strictCall{call: call, lhs: args[0], rhs: args[1]}
	if call.Function() != operators.In {
		s.null = isNull(args[0]) || isNull(args[1])
	}
	return s, nil
}

func isNull(i interpreter.InterpretableV2) bool {
	c, ok := i.(interpreter.InterpretableConst)
	return ok && c.Value() == types.NullValue
}

// strictCall is ==, != or in that fails on operands of different types.
// It is no InterpretableCall, so that Optimize leaves it as it is.
type strictCall struct {
	call     interpreter.InterpretableCall
	lhs, rhs interpreter.InterpretableV2
	null     bool // a side is the literal null
}

func (s *strictCall) ID() int64 { return s.call.ID() }

func (s *strictCall) Eval(a interpreter.Activation) ref.Val {
	return interpreter.EvalActivation(a, s.Exec)
}

func (s *strictCall) Exec(f *interpreter.ExecutionFrame) ref.Val {
	l := s.lhs.Exec(f)
	if types.IsUnknownOrError(l) {
		return l
	}
	r := s.rhs.Exec(f)
	if types.IsUnknownOrError(r) {
		return r
	}
	res := s.mismatch(l, r)
	if res == nil {
		switch s.call.Function() {
		case operators.Equals:
			res = types.Equal(l, r)
		case operators.NotEquals:
			res = types.Bool(types.Equal(l, r) != types.True)
		default:
			if c, ok := r.(traits.Container); ok && r.Type().HasTrait(traits.ContainerType) {
				res = c.Contains(l)
			} else {
				res = types.ValOrErr(r, "no such overload")
			}
		}
	}
	if costs := f.CostTracker(); costs != nil {
		costs.EvalBinary(f, s.call.ID(), s.call, l, r, res)
	}
	return res
}

// mismatch is the error of operands of different types, or nil.
func (s *strictCall) mismatch(l, r ref.Val) ref.Val {
	if s.null {
		return nil
	}
	if s.call.Function() != operators.In {
		if kind(l) != kind(r) {
			return types.NewErr("%s %s %s: values of different types are not compared", l.Type().TypeName(), s.call.Function(), r.Type().TypeName())
		}
		return nil
	}
	it, ok := r.(traits.Iterable) // a list's elements, a map's keys
	if !ok {
		return nil // in fails on its own
	}
	if l == types.NullValue {
		if c, ok := r.(traits.Container); ok && c.Contains(l) == types.True {
			return nil
		}
	}
	for i := it.Iterator(); i.HasNext() == types.True; {
		if e := i.Next(); e != types.NullValue && kind(e) != kind(l) {
			return types.NewErr("%s in a container holding %s: values of different types are not compared", l.Type().TypeName(), e.Type().TypeName())
		}
	}
	return nil
}

// kind is a value's type for strictCall, all numbers being one.
func kind(v ref.Val) string {
	switch n := v.Type().TypeName(); n {
	case "int", "uint", "double":
		return "number"
	default:
		return n
	}
}

// ClassificationWithheld, set to true in a descriptor's Classification,
// says the classifier's attributes were withheld on purpose (RFC-010
// §12.3's re-evaluation): conditions that read classification.* then do
// not hold, instead of failing with policy_error.
const ClassificationWithheld = "sluice.withheld"

func compileCondition(env *cel.Env, src string, costLimit uint64) (*condition, error) {
	checked, iss := env.Compile(src)
	if iss.Err() != nil {
		return nil, iss.Err()
	}
	if t := checked.OutputType(); !t.IsExactType(cel.BoolType) {
		hint := ""
		if t.IsExactType(cel.DynType) {
			hint = " (compare explicitly, e.g. `args.flag == true`)"
		}
		return nil, fmt.Errorf("the condition returns %s, not bool%s", t, hint)
	}
	prg, err := env.Program(checked,
		cel.CostLimit(costLimit),
		cel.InterruptCheckFrequency(100),
		cel.EvalOptions(cel.OptOptimize),
		cel.CustomDecoratorV2(strictEquality),
		cel.CustomDecoratorV2(chargeRegexFirst),
		cel.CostTrackerOptions(regexCostOptions...),
	)
	if err != nil {
		return nil, err
	}
	c := &condition{src: src, prg: prg, static: true, costLimit: costLimit}
	c.reads = readNames(checked.NativeRep())
	c.numberTypes = numberTypes(checked.NativeRep())
	for _, ref := range checked.NativeRep().ReferenceMap() {
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
	if _, err := dec.ReadToken(); err != io.EOF {
		// A token, or a syntax error (a stray comma or bracket): either
		// way not the end of the one value.
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
		if u, err := tok.Uint(); err == nil {
			// Above int64: as a float64 it would be rounded
			// (12345678901234567890 read as ...7168), so a condition
			// on the number a uint64 field gets would not see it.
			return u, nil
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
