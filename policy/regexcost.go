package policy

import (
	"math"
	"regexp"
	"sync"
	"sync/atomic"

	"cel.dev/cel-go/common/cost"
	"cel.dev/cel-go/common/overloads"
	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/common/types/ref"
	"cel.dev/cel-go/interpreter"
)

// CEL charges `matches` by the length of the string times a quarter of the
// pattern's (it guesses four characters an expression), and only once the
// match has run. Go's RE2 takes up to the string's length times the
// regex's program, which a counted repetition makes far longer than the
// pattern: a{1,1000}b is ten characters and 2,002 instructions, and 4 MiB
// of "a" against it ran 78 s before the cost limit failed the condition
// (TestAttackRegexChargedByProgram). So a match is charged by the larger
// of the two, and before it runs: one the cost limit cannot pay fails the
// condition with the limit's error, never run.

// regexCost is the cost of matching s against pattern: CEL's, with the
// regex's program size for the pattern's length where it is larger.
func regexCost(s, pattern string) uint64 {
	return matchCost(len(s), max(len(pattern), programSize(pattern)))
}

// matchCost is regexCost of a string of n bytes and a regex of size.
func matchCost(n, size int) uint64 {
	str := math.Ceil(float64(1+n) * cost.StringTraversalCostFactor)
	re := math.Ceil(float64(size) * cost.RegexStringLengthCostFactor)
	if c := str * re; c < math.MaxUint64 {
		return uint64(c)
	}
	return math.MaxUint64
}

// programSizes caches programSize for the patterns of conditions, which
// come back at every call; a pattern from the arguments may be new each
// time, so the cache stops growing at maxProgramSizes.
var programSizes sync.Map // pattern -> int

const maxProgramSizes, maxCachedPattern = 4096, 1 << 10

var programSizesLen atomic.Int32

// programSize is the size of pattern's RE2 program, 0 if it is no regex
// (the match fails then).
func programSize(pattern string) int {
	if n, ok := programSizes.Load(pattern); ok {
		return n.(int)
	}
	n, err := types.RegexProgramSize(pattern)
	if err != nil {
		n = 0
	}
	if len(pattern) <= maxCachedPattern && programSizesLen.Load() < maxProgramSizes {
		if _, loaded := programSizes.LoadOrStore(pattern, n); !loaded {
			programSizesLen.Add(1)
		}
	}
	return n
}

// regexTracker is the cost tracker's price of a match.
func regexTracker(args []ref.Val, _ ref.Val) *uint64 {
	if len(args) != 2 {
		return nil
	}
	s, ok1 := args[0].(types.String)
	p, ok2 := args[1].(types.String)
	if !ok1 || !ok2 {
		return nil
	}
	c := regexCost(string(s), string(p))
	return &c
}

// regexCostOptions price matches by regexTracker.
var regexCostOptions = []cost.TrackerOption{
	cost.OverloadTracker(overloads.Matches, regexTracker),
	cost.OverloadTracker(overloads.MatchesString, regexTracker),
}

// chargeRegexFirst is a CEL decorator: a call of matches is charged to
// the cost tracker before it runs, so that the cost limit stops it first.
func chargeRegexFirst(i interpreter.InterpretableV2) (interpreter.InterpretableV2, error) {
	call, ok := i.(interpreter.InterpretableCall)
	if !ok || call.Function() != overloads.Matches || len(call.Args()) != 2 {
		return i, nil
	}
	m := &regexCall{call: call, s: call.Args()[0], p: call.Args()[1]}
	if c, ok := m.p.(interpreter.InterpretableConst); ok {
		if p, ok := c.Value().(types.String); ok {
			m.re, _ = regexp.Compile(string(p)) // an error is the call's, at run time
			// The policy's own pattern, however long: its size is
			// known once, not worked out at every call.
			if _, ok := programSizes.Load(string(p)); !ok {
				n, _ := types.RegexProgramSize(string(p))
				programSizes.Store(string(p), n)
			}
		}
	}
	return m, nil
}

// regexCall is matches, charged before it runs. It is no
// InterpretableCall, so that Optimize leaves it as it is.
type regexCall struct {
	call interpreter.InterpretableCall
	s, p interpreter.InterpretableV2
	re   *regexp.Regexp // the constant pattern's, compiled once
}

func (m *regexCall) ID() int64 { return m.call.ID() }

func (m *regexCall) Eval(a interpreter.Activation) ref.Val {
	return interpreter.EvalActivation(a, m.Exec)
}

func (m *regexCall) Exec(f *interpreter.ExecutionFrame) ref.Val {
	s := m.s.Exec(f)
	if types.IsUnknownOrError(s) {
		return s
	}
	p := m.p.Exec(f)
	if types.IsUnknownOrError(p) {
		return p
	}
	str, ok1 := s.(types.String)
	pat, ok2 := p.(types.String)
	if !ok1 || !ok2 {
		return types.NewErr("no such overload: %s.matches(%s)", s.Type().TypeName(), p.Type().TypeName())
	}
	if costs := f.CostTracker(); costs != nil {
		// Panics, as the tracker does, past the limit.
		costs.EvalBinary(f, m.call.ID(), m.call, s, p, nil)
	}
	re := m.re
	if re == nil || re.String() != string(pat) {
		var err error
		if re, err = regexp.Compile(string(pat)); err != nil {
			return types.WrapErr(err)
		}
	}
	return types.Bool(re.MatchString(string(str)))
}
