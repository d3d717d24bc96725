package policy

import (
	"fmt"
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"

	"cel.dev/cel-go/common/ast"
	"cel.dev/cel-go/common/operators"
	"cel.dev/cel-go/common/types"
)

// A condition may find a member not by its name but by testing the keys of
// an object it iterates: args.exists(k, k == "targetDir" && ...),
// args.all(k, k != "force"), args.filter(k, k.startsWith("secret")). A key
// such a test passes over for its case alone ({"TargetDir": ...}) is one a
// Go upstream reads as the name the test looks for, so, as for names read
// directly, a condition fails on arguments holding one, in the objects it
// iterates.
//
// A key k "passes over for its case" a test of the iteration variable
// against a literal when the test, made without regard to case, holds and
// the test itself does not:
//
//	k == "x", k != "x", k in ["x", ...]   k equals "x" but for case
//	k.startsWith("x")                     k starts with "x" but for case
//	k.endsWith("x"), k.contains("x")      likewise
//	k.matches("re")                       k matches (?i)re, not re
//	k.lowerAscii(), k.upperAscii()        k holds K (KELVIN SIGN) or ſ (LONG S),
//	                                      which Go folds to k and s and these do not
//
// args[k] and size(k) test no name. Any other use of the variable
// (k.substring(0, 4) == "drop", k == args.name, args.map(k, k)) is not
// followed: k then passes over any string literal of the condition that it
// holds in another case somewhere. A key tested against no literal at all
// (k == args.name) is not checked.

// keyOp is how a condition tests an iterated key against a literal.
type keyOp uint8

const (
	keyEq keyOp = iota
	keyPrefix
	keySuffix
	keyContains
	keyMatches
	keyASCIIFold // lowerAscii or upperAscii: no literal
	keyAnywhere  // not followed: the literal anywhere in the key
)

// keyTest is one test of an iterated object's keys.
type keyTest struct {
	op       keyOp
	lit      string
	re, fold *regexp.Regexp // keyMatches: the pattern, and it without regard to case
	// size is the larger of a keyMatches test's two regexes' sizes
	// (regexCost), by which testing a key is charged (see charge).
	size int
	// keyContains, keyAnywhere: lit's runes as they are and folded
	// (foldRune), each with its KMP table, so that a key is searched in
	// one pass whatever its length (see litTables).
	exact, folded *runeSearch
}

// passesOver reports whether the test passes over k for its case alone.
func (t *keyTest) passesOver(k string) bool {
	switch t.op {
	case keyEq:
		return k != t.lit && strings.EqualFold(k, t.lit)
	case keyPrefix:
		fold, exact := foldAt(k, t.lit, 0)
		return fold && !exact
	case keySuffix:
		i := len(k)
		for n := utf8.RuneCountInString(t.lit); n > 0 && i > 0; n-- {
			_, size := utf8.DecodeLastRuneInString(k[:i])
			i -= size
		}
		fold, exact := foldAt(k, t.lit, i)
		return fold && !exact
	case keyContains:
		return !strings.Contains(k, t.lit) && t.folded.count(k, true, true) > 0
	case keyMatches:
		return !t.re.MatchString(k) && t.fold.MatchString(k)
	case keyASCIIFold:
		return strings.ContainsAny(k, "\u212a\u017f")
	case keyAnywhere:
		// Every place k holds lit is one it holds lit but for case: it
		// holds lit in another case somewhere when there are more of
		// the latter.
		return t.folded.count(k, true, false) > t.exact.count(k, false, false)
	}
	return false
}

// charge takes what testing k costs from left, what is left of the
// condition's cost limit for testing keys, or returns an error if it is
// more: as much as CEL charges a match of k, though the test runs two.
// Only a regex is charged: the other tests are linear in the key
// (runeSearch), a regex takes up to its program's size for each byte,
// which a counted repetition makes thousands of instructions
// ([a-z0-9+/]{1000,}), and a 4 MiB key took 40 s against it
// (TestAttackKeyRegexChargedByProgram).
func (t *keyTest) charge(k string, left *uint64) error {
	if t.op != keyMatches {
		return nil
	}
	c := matchCost(len(k), t.size)
	if c > *left {
		return fmt.Errorf("the tool arguments cannot be read: testing member names (one of %d bytes) with %s passes the condition's cost limit", len(k), t)
	}
	*left -= c
	return nil
}

// foldAt reports whether k[i:] (i a byte offset) begins with lit but for
// case, and whether exactly. Simple case folding maps a rune to a rune:
// equal-fold strings have as many runes.
func foldAt(k, lit string, i int) (fold, exact bool) {
	end := i
	for n := utf8.RuneCountInString(lit); n > 0; n-- {
		if end >= len(k) {
			return false, false
		}
		_, size := utf8.DecodeRuneInString(k[end:])
		end += size
	}
	return strings.EqualFold(k[i:end], lit), k[i:end] == lit
}

// runeSearch finds a literal in a key in one pass (Knuth-Morris-Pratt),
// by runes: keys come from the agent, and a scan trying the literal at
// each offset costs len(key)·len(lit) for every literal of the condition
// and every key of the arguments, outside CEL's cost limit.
type runeSearch struct {
	pat  []rune
	next []int // next[i]: the longest proper border of pat[:i+1]
}

func newRuneSearch(lit string, fold bool) *runeSearch {
	s := &runeSearch{}
	for _, r := range lit {
		if fold {
			r = foldRune(r)
		}
		s.pat = append(s.pat, r)
	}
	s.next = make([]int, len(s.pat))
	for i, b := 1, 0; i < len(s.pat); i++ {
		for b > 0 && s.pat[i] != s.pat[b] {
			b = s.next[b-1]
		}
		if s.pat[i] == s.pat[b] {
			b++
		}
		s.next[i] = b
	}
	return s
}

// count returns how many times (overlapping) k holds the pattern, its
// runes folded if fold; with first, it stops at the first.
func (s *runeSearch) count(k string, fold, first bool) int {
	if s == nil || len(s.pat) == 0 {
		return 0
	}
	n, b := 0, 0
	for _, r := range k {
		if fold {
			r = foldRune(r)
		}
		for b > 0 && r != s.pat[b] {
			b = s.next[b-1]
		}
		if r == s.pat[b] {
			b++
		}
		if b == len(s.pat) {
			if n++; first {
				return n
			}
			b = s.next[b-1]
		}
	}
	return n
}

// foldRune is the least rune of r's simple case folding orbit: two runes
// are equal but for case (as strings.EqualFold compares them) exactly
// when their foldRunes are equal.
func foldRune(r rune) rune {
	if r < utf8.RuneSelf {
		if 'a' <= r && r <= 'z' {
			r -= 'a' - 'A'
		}
		return r
	}
	least := r
	for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
		least = min(least, f)
	}
	return least
}

// litTables gives t, a keyContains or keyAnywhere test, its searches.
func litTables(t keyTest) keyTest {
	t.exact, t.folded = newRuneSearch(t.lit, false), newRuneSearch(t.lit, true)
	return t
}

func (t *keyTest) String() string {
	switch t.op {
	case keyEq:
		return fmt.Sprintf("== %q", t.lit)
	case keyPrefix:
		return fmt.Sprintf("startsWith(%q)", t.lit)
	case keySuffix:
		return fmt.Sprintf("endsWith(%q)", t.lit)
	case keyContains:
		return fmt.Sprintf("contains(%q)", t.lit)
	case keyMatches:
		return fmt.Sprintf("matches(%q)", t.lit)
	case keyASCIIFold:
		return "lowerAscii()"
	}
	return fmt.Sprintf("%q", t.lit)
}

func keyVariantErr(k string, t *keyTest) error {
	return fmt.Errorf("the tool arguments cannot be read: member %q differs only in case from a key the condition tests for (%s)", k, t)
}

func stringLit(e ast.Expr) (string, bool) {
	if e.Kind() != ast.LiteralKind {
		return "", false
	}
	s, ok := e.AsLiteral().Value().(string)
	return s, ok
}

// comprehension records what the comprehension c reads: the names of a
// list of names it iterates and looks up in args, or how it tests the keys
// of an object of args it iterates.
func (b *readBuilder) comprehension(c ast.ComprehensionExpr) {
	v := c.IterVar()
	if r := c.IterRange(); r.Kind() == ast.ListKind {
		var names []string
		for _, e := range r.AsList().Elements() {
			if s, ok := stringLit(e); ok {
				names = append(names, s)
			}
		}
		if len(names) > 0 {
			b.lookups(c.LoopStep(), v, names)
			b.lookups(c.Result(), v, names)
		}
		return
	}
	if t := b.a.GetType(c.IterRange().ID()); t.Kind() == types.ListKind {
		return // elements, not keys
	}
	at, ok := argsPath(c.IterRange())
	if !ok {
		return
	}
	var tests []keyTest
	opaque := false
	for _, e := range []ast.Expr{c.LoopCondition(), c.LoopStep(), c.Result()} {
		if keyUses(e, v, &tests) {
			opaque = true
		}
	}
	if opaque {
		b.opaque = append(b.opaque, at)
	}
	if len(tests) == 0 {
		return
	}
	rs := b.set()
	if at == anyPath {
		rs.anyKeys = append(rs.anyKeys, tests...)
		return
	}
	rs.keys[at] = append(rs.keys[at], tests...)
	b.inner(at)
}

// lookups records the names a comprehension over them looks up in args
// through its variable v: v in args.x, args.x[v].
func (b *readBuilder) lookups(e ast.Expr, v string, names []string) {
	ast.PostOrderVisit(e, ast.NewExprVisitor(func(e ast.Expr) {
		if e.Kind() != ast.CallKind {
			return
		}
		c := e.AsCall()
		if len(c.Args()) != 2 {
			return
		}
		var key, obj ast.Expr
		switch c.FunctionName() {
		case operators.In:
			key, obj = c.Args()[0], c.Args()[1]
		case operators.Index, operators.OptIndex:
			key, obj = c.Args()[1], c.Args()[0]
		default:
			return
		}
		if key.Kind() == ast.IdentKind && key.AsIdent() == v {
			for _, n := range names {
				b.add(n, obj)
			}
		}
	}))
}

// keyUses appends to tests how e tests the key variable v against
// literals, and reports whether e uses v in another way (see above).
func keyUses(e ast.Expr, v string, tests *[]keyTest) (opaque bool) {
	isV := func(e ast.Expr) bool { return e.Kind() == ast.IdentKind && e.AsIdent() == v }
	switch e.Kind() {
	case ast.IdentKind:
		return isV(e)
	case ast.SelectKind:
		return keyUses(e.AsSelect().Operand(), v, tests)
	case ast.ListKind:
		for _, x := range e.AsList().Elements() {
			opaque = keyUses(x, v, tests) || opaque
		}
		return opaque
	case ast.MapKind:
		for _, en := range e.AsMap().Entries() {
			m := en.AsMapEntry()
			opaque = keyUses(m.Key(), v, tests) || opaque
			opaque = keyUses(m.Value(), v, tests) || opaque
		}
		return opaque
	case ast.StructKind:
		for _, f := range e.AsStruct().Fields() {
			opaque = keyUses(f.AsStructField().Value(), v, tests) || opaque
		}
		return opaque
	case ast.ComprehensionKind:
		c := e.AsComprehension()
		opaque = keyUses(c.IterRange(), v, tests)
		opaque = keyUses(c.AccuInit(), v, tests) || opaque
		if c.IterVar() == v || c.IterVar2() == v || c.AccuVar() == v {
			return opaque // v is another variable inside
		}
		for _, x := range []ast.Expr{c.LoopCondition(), c.LoopStep(), c.Result()} {
			opaque = keyUses(x, v, tests) || opaque
		}
		return opaque
	case ast.CallKind:
	default:
		return false
	}
	c := e.AsCall()
	args := c.Args()
	if c.IsMemberFunction() && isV(c.Target()) {
		switch fn := c.FunctionName(); {
		case len(args) == 0 && (fn == "lowerAscii" || fn == "upperAscii"):
			*tests = append(*tests, keyTest{op: keyASCIIFold})
			return false
		case len(args) == 0 && fn == "size":
			return false
		case len(args) == 1 && (fn == "startsWith" || fn == "endsWith" || fn == "contains" || fn == "matches"):
			if lit, ok := stringLit(args[0]); ok {
				if t, ok := newKeyTest(fn, lit); ok {
					*tests = append(*tests, t)
					return false
				}
			}
		}
	}
	switch fn := c.FunctionName(); {
	case (fn == operators.Equals || fn == operators.NotEquals) && len(args) == 2:
		for i, j := range []int{1, 0} {
			if lit, ok := stringLit(args[j]); ok && isV(args[i]) {
				*tests = append(*tests, keyTest{op: keyEq, lit: lit})
				return false
			}
		}
	case fn == operators.In && len(args) == 2 && isV(args[0]) && args[1].Kind() == ast.ListKind:
		var lits []keyTest
		for _, x := range args[1].AsList().Elements() {
			lit, ok := stringLit(x)
			if !ok {
				lits = nil
				break
			}
			lits = append(lits, keyTest{op: keyEq, lit: lit})
		}
		if lits != nil {
			*tests = append(*tests, lits...)
			return false
		}
	case (fn == operators.Index || fn == operators.OptIndex) && len(args) == 2 && isV(args[1]):
		return keyUses(args[0], v, tests) // looks the key itself up
	case fn == "size" && len(args) == 1 && isV(args[0]):
		return false
	case fn == "matches" && len(args) == 2 && isV(args[0]):
		if lit, ok := stringLit(args[1]); ok {
			if t, ok := newKeyTest(fn, lit); ok {
				*tests = append(*tests, t)
				return false
			}
		}
	}
	if c.IsMemberFunction() {
		opaque = keyUses(c.Target(), v, tests)
	}
	for _, x := range args {
		opaque = keyUses(x, v, tests) || opaque
	}
	return opaque
}

func newKeyTest(fn, lit string) (keyTest, bool) {
	switch fn {
	case "startsWith":
		return keyTest{op: keyPrefix, lit: lit}, true
	case "endsWith":
		return keyTest{op: keySuffix, lit: lit}, true
	case "contains":
		return litTables(keyTest{op: keyContains, lit: lit}), true
	case "matches":
		re, err := regexp.Compile(lit)
		if err != nil {
			return keyTest{}, false // fails at evaluation; not followed
		}
		fold, err := regexp.Compile("(?i)" + lit)
		if err != nil {
			return keyTest{}, false
		}
		t := keyTest{op: keyMatches, lit: lit, re: re, fold: fold}
		for _, p := range [...]string{lit, "(?i)" + lit} {
			n, _ := types.RegexProgramSize(p)
			t.size = max(t.size, len(p), n)
		}
		return t, true
	}
	return keyTest{}, false
}

// finish gives the objects whose keys the condition uses in ways not
// followed a test for every string literal of the condition.
func (b *readBuilder) finish() {
	if len(b.opaque) == 0 {
		return
	}
	tests := []keyTest{{op: keyASCIIFold}}
	seen := map[string]bool{}
	for _, l := range b.lits {
		if !seen[l] {
			seen[l] = true
			tests = append(tests, litTables(keyTest{op: keyAnywhere, lit: l}))
		}
	}
	rs := b.set()
	for _, at := range b.opaque {
		if at == anyPath {
			rs.anyKeys = append(rs.anyKeys, tests...)
			continue
		}
		rs.keys[at] = append(rs.keys[at], tests...)
		b.inner(at)
	}
}
