package classifier

import (
	"fmt"
	"regexp"
	"regexp/syntax"
	"slices"
	"strings"
	"sync"
	"unicode/utf8"
)

// A rule's regexp, run over a whole text that is dense with the words it
// waits for, reads every byte with hundreds of live states: a few
// milliseconds per 4 KiB, and a call's arguments hold many of those.
// Run instead from each place a match can start: the words a match starts
// with (taken from the regexp itself, so they cannot drift from it) are
// found in one pass over the text, and the regexp is tried, anchored,
// from each. An anchored try ends as soon as the words after the start
// stop fitting, a few bytes on most text, so the cost follows the number
// of starts, not the text's length times the rule's size; and, being the
// same regexp run from every place it could match, it finds what the
// unanchored search finds.

// startPiece is a string every match of a regexp (or of a part of one)
// may start with: the whole part if full, else a prefix of it; back says
// the match starts one character before s (a class too large to list,
// such as [^\p{L}], read as "the character before the word").
type startPiece struct {
	s    string
	full bool
	back bool
	// run says the piece begins with a repeat of one character with no
	// upper bound ("={3,}"): a match starting inside a run of it means
	// one at the run's start, so only the start is tried (trying each
	// place in a run of 64 KiB of "=" would read it 64 Ki times).
	run bool
	// edge says the match starts with \b: a place that is no word
	// boundary is not tried.
	edge bool
}

const (
	startMaxLen    = 12   // bytes: longer prefixes add nothing but states
	startMaxPieces = 4096 // more and the rule is run the old way
	startMaxClass  = 8    // a class of more runes than this is not listed
)

// startWords returns the strings every match of re starts with, and
// whether each starts one character before; ok is false if a match can
// start with no word (an empty match, a leading class too large to list).
func startWords(re *regexp.Regexp) (words []string, back, run, edge []bool, ok bool) {
	parsed, err := syntax.Parse(re.String(), syntax.Perl)
	if err != nil {
		return nil, nil, nil, nil, false
	}
	// Not simplified: "={3,}" stays a repeat, not "==" and "=+".
	pieces, ok := startPieces(parsed, true)
	if !ok {
		return nil, nil, nil, nil, false
	}
	for _, p := range pieces {
		if p.s == "" {
			return nil, nil, nil, nil, false
		}
		words = append(words, p.s)
		back = append(back, p.back)
		run = append(run, p.run && !p.back)
		edge = append(edge, p.edge && !p.back)
	}
	return words, back, run, edge, true
}

// startPieces returns the start pieces of re; first says re begins the match,
// where one unlisted character may be taken as the one before the word.
func startPieces(re *syntax.Regexp, first bool) ([]startPiece, bool) {
	switch re.Op {
	case syntax.OpLiteral:
		if re.Flags&syntax.FoldCase != 0 {
			return nil, false
		}
		return []startPiece{{s: string(re.Rune), full: true}}, true
	case syntax.OpWordBoundary:
		return []startPiece{{full: true, edge: first}}, true
	case syntax.OpEmptyMatch, syntax.OpBeginLine, syntax.OpBeginText, syntax.OpNoWordBoundary, syntax.OpEndLine, syntax.OpEndText:
		return []startPiece{{full: true}}, true
	case syntax.OpCharClass:
		var runes []rune
		for i := 0; i < len(re.Rune); i += 2 {
			for r := re.Rune[i]; r <= re.Rune[i+1] && len(runes) <= startMaxClass; r++ {
				runes = append(runes, r)
			}
		}
		if len(runes) > startMaxClass {
			if first {
				return []startPiece{{full: true, back: true}}, true
			}
			return nil, false
		}
		var out []startPiece
		for _, r := range runes {
			out = append(out, startPiece{s: string(r), full: true})
		}
		return out, true
	case syntax.OpAnyChar, syntax.OpAnyCharNotNL:
		if first {
			return []startPiece{{full: true, back: true}}, true
		}
		return nil, false
	case syntax.OpCapture:
		return startPieces(re.Sub[0], first)
	case syntax.OpAlternate:
		var out []startPiece
		for _, sub := range re.Sub {
			ps, ok := startPieces(sub, first)
			if !ok {
				return nil, false
			}
			out = append(out, ps...)
		}
		return out, len(out) <= startMaxPieces
	case syntax.OpQuest, syntax.OpStar, syntax.OpPlus, syntax.OpRepeat:
		ps, ok := startPieces(re.Sub[0], first)
		if !ok {
			return nil, false
		}
		if sub := re.Sub[0]; (re.Op == syntax.OpPlus || re.Op == syntax.OpRepeat && re.Min >= 1) && sub.Op == syntax.OpLiteral && len(sub.Rune) == 1 && sub.Flags&syntax.FoldCase == 0 {
			// A run of one character: its least length is the word.
			n := max(1, re.Min)
			return []startPiece{{s: strings.Repeat(string(sub.Rune), n), full: re.Op == syntax.OpRepeat && re.Max == re.Min, run: re.Max == -1}}, true
		}
		if re.Op != syntax.OpQuest {
			// What follows one round may be another: stop the words there.
			for i := range ps {
				ps[i].full = false
			}
		}
		if re.Op == syntax.OpQuest || re.Op == syntax.OpStar || re.Op == syntax.OpRepeat && re.Min == 0 {
			ps = append(ps, startPiece{full: true})
		}
		return ps, true
	case syntax.OpConcat:
		cur := []startPiece{{full: true}}
		for _, sub := range re.Sub {
			if !slices.ContainsFunc(cur, func(p startPiece) bool { return p.full }) {
				break
			}
			// The sub begins the match while every piece so far is empty
			// and not already one character back.
			lead := first && !slices.ContainsFunc(cur, func(p startPiece) bool { return p.s != "" || p.back })
			next, ok := startPieces(sub, lead)
			if !ok {
				// Stop every piece here, unless one is still empty.
				for i := range cur {
					if cur[i].s == "" {
						return nil, false
					}
					cur[i].full = false
				}
				break
			}
			var out []startPiece
			for _, p := range cur {
				if !p.full {
					out = append(out, p)
					continue
				}
				for _, q := range next {
					np := startPiece{s: p.s + q.s, full: q.full, back: p.back || q.back, run: p.run || p.s == "" && q.run,
						edge: p.edge || p.s == "" && !p.back && q.edge}
					if len(np.s) >= startMaxLen {
						np.full = false
					}
					out = append(out, np)
				}
			}
			if len(out) > startMaxPieces {
				// Too many: keep what is there, stopped.
				for i := range cur {
					if cur[i].s == "" {
						return nil, false
					}
					cur[i].full = false
				}
				break
			}
			cur = out
		}
		return dedupe(cur), true
	}
	return nil, false
}

// wordEdge reports whether \b holds at text[i] (ASCII word characters,
// as in package regexp).
func wordEdge(text string, i int) bool {
	var before, after rune
	if i > 0 {
		before, _ = utf8.DecodeLastRuneInString(text[:i])
	}
	if i < len(text) {
		after, _ = utf8.DecodeRuneInString(text[i:])
	}
	return syntax.IsWordChar(before) != syntax.IsWordChar(after)
}

func dedupe(ps []startPiece) []startPiece {
	seen := make(map[startPiece]bool, len(ps))
	out := ps[:0]
	for _, p := range ps {
		if !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	return out
}

// startRules are a family of rules (at most 64) run from their starts.
// Their automaton and anchored expressions are made at first use (a few
// MB for every family): a process that never scans text (the CLI, sluice
// bench's proxies) does not hold them.
type startRules struct {
	src  []phraseRule
	once sync.Once

	auto  dfa
	needs []startNeed // by the automaton's need index
	rules []startRule
}

type startNeed struct {
	rule int
	n    int  // bytes
	back bool // the match starts one character before
	run  bool // see startPiece
	edge bool // see startPiece
}

type startRule struct {
	re *regexp.Regexp
	// atStart is re anchored at the text's start; inside is re anchored
	// one character in, that character read as the one before the match,
	// so that \b, ^ and a leading class see what the whole-text search
	// sees. Both nil: re has no start words and runs over the whole text.
	atStart, inside *regexp.Regexp
	// jumps, if not nil, are the runs re starts with: see runJumps.
	jumps []runJump
	// may, if not nil, is false where no match of re can start.
	may func(text string, q int) bool
}

// startChecks are the quick tests of a match's start some rules have.
var startChecks = map[*regexp.Regexp]func(text string, q int) bool{
	reImageLeak: imageMayLeak,
}

// runJump says a match starting with a run of c (of at least n) takes
// all of the run: the try can start n before its end.
type runJump struct {
	c rune
	n int
}

// runJumps returns, for a regexp made of a choice of runs of one
// character each ("(={3,}|-{3,})") then a rest that cannot start with
// any of those characters, the runs; else nil. A match of such a regexp
// starting at a run of c takes all of the run (the rest cannot start
// inside it), and reads no character before it, so it is the match
// starting n before the run's end with its start moved back: trying it
// there reads the run once, not the 4,000 "=" of a separator line at
// the NFA's cost of some 100 ns a byte.
func runJumps(re *regexp.Regexp) []runJump {
	parsed, err := syntax.Parse(re.String(), syntax.Perl)
	if err != nil {
		return nil
	}
	for parsed.Op == syntax.OpCapture {
		parsed = parsed.Sub[0]
	}
	if parsed.Op != syntax.OpConcat || len(parsed.Sub) < 2 {
		return nil
	}
	head := parsed.Sub[0]
	for head.Op == syntax.OpCapture {
		head = head.Sub[0]
	}
	choices := []*syntax.Regexp{head}
	if head.Op == syntax.OpAlternate {
		choices = head.Sub
	}
	var jumps []runJump
	for _, c := range choices {
		for c.Op == syntax.OpCapture {
			c = c.Sub[0]
		}
		unbounded := c.Op == syntax.OpPlus || c.Op == syntax.OpRepeat && c.Min >= 1 && c.Max == -1
		if !unbounded || c.Flags&syntax.NonGreedy != 0 {
			return nil
		}
		lit := c.Sub[0]
		if lit.Op != syntax.OpLiteral || len(lit.Rune) != 1 || lit.Flags&syntax.FoldCase != 0 {
			return nil
		}
		jumps = append(jumps, runJump{c: lit.Rune[0], n: max(1, c.Min)})
	}
	rest := &syntax.Regexp{Op: syntax.OpConcat, Sub: parsed.Sub[1:]}
	pieces, ok := startPieces(rest, false)
	if !ok {
		return nil
	}
	for _, p := range pieces {
		if p.s == "" || p.back || p.edge {
			return nil
		}
		r, _ := utf8.DecodeRuneInString(p.s)
		for _, j := range jumps {
			if r == j.c {
				return nil
			}
		}
	}
	return jumps
}

func newStartRules(rules []phraseRule) *startRules {
	if len(rules) > 64 {
		panic("classifier: more than 64 rules in one family")
	}
	return &startRules{src: rules}
}

// ready makes sr's automaton and expressions, once, and returns sr.
func (sr *startRules) ready() *startRules {
	sr.once.Do(sr.build)
	return sr
}

func (sr *startRules) build() {
	rules := sr.src
	sr.rules = make([]startRule, len(rules))
	var needs []need
	for i, r := range rules {
		re := r.re
		sr.rules[i].re = re
		words, back, run, edge, ok := startWords(re)
		if !ok {
			continue
		}
		sr.rules[i].atStart = regexp.MustCompile(`^(?:` + re.String() + `)`)
		sr.rules[i].inside = regexp.MustCompile(`^(?s:.)(?:` + re.String() + `)`)
		sr.rules[i].jumps = runJumps(re)
		sr.rules[i].may = startChecks[re]
		for k, w := range words {
			needs = append(needs, need{w, i})
			sr.needs = append(sr.needs, startNeed{rule: i, n: len(w), back: back[k], run: run[k], edge: edge[k]})
		}
	}
	sr.auto = buildDFA(needs)
}

// starts returns, for each rule in mask that has start words, the places
// in text where a match of it may start, in order, or wholeText.
//
// Where a rule's starts are dense (more than one per startsDense bytes,
// "密码密码密码…"), tries from each overlap and read the same bytes again
// and again, while the whole-text search runs them together, as one
// state set: the rule gets wholeText and is searched the old way, at
// the cost it always had. Sparse starts, the common case and that of a
// text padded with one phrase, are tried one by one.
//
// n counts the starts of all rules in mask: see tooDense.
func (sr *startRules) starts(text string, mask uint64) (at [][]int, n int) {
	sr.ready()
	out := sr.candidates(text, mask)
	for i, at := range out {
		n += len(at)
		if len(at) >= startsDenseMin && len(at)*startsDense > len(text) {
			out[i] = wholeText
		}
	}
	return out, n
}

const (
	startsDense    = 16
	startsDenseMin = 16
)

// tooDense reports a text in which the words rules start with are too
// many to be anything but a text made of them: more than tooDenseMin
// starts, one per tooDenseBytes bytes or more. Run, such a text costs
// the rules 100 times ordinary text (override verbs of a dozen languages
// in a row: 4.7 ms per 4 KiB, 5 s of CPU for a call of 4 MiB), so it is
// not run but reported as an override. On the tune sources' benign texts
// with 64 starts or more the densest has one per 37 bytes; the densest
// injections one per 5.
func tooDense(n, size int) (string, bool) {
	if n < tooDenseMin || n*tooDenseBytes <= size {
		return "", false
	}
	return fmt.Sprintf("%d instruction words in %d bytes", n, size), true
}

const (
	tooDenseMin   = 64
	tooDenseBytes = 16
)

// wholeText, as the starts of a rule, says to search all of the text.
var wholeText = []int{-1}

func isWholeText(at []int) bool { return len(at) == 1 && at[0] == -1 }

// candidates returns, for each rule in mask that has start words, the
// places in text where a match of it may start, in order.
func (sr *startRules) candidates(text string, mask uint64) [][]int {
	sr.ready()
	out := make([][]int, len(sr.rules))
	sr.auto.each(text, func(end int, k int32) {
		n := sr.needs[k]
		if mask&(1<<n.rule) == 0 {
			return
		}
		q := end - n.n
		if n.edge && !wordEdge(text, q) {
			return
		}
		if n.run && q > 0 {
			// Inside a run: tried at its start (an ASCII character is the
			// rune before it only as the byte before it).
			if c := text[q]; c < utf8.RuneSelf {
				if text[q-1] == c {
					return
				}
			} else if r, _ := utf8.DecodeRuneInString(text[q:]); r == lastRune(text[:q]) {
				return
			}
		}
		if n.back {
			if q == 0 {
				return
			}
			_, size := utf8.DecodeLastRuneInString(text[:q])
			q -= size
		}
		out[n.rule] = append(out[n.rule], q)
	})
	for i := range out {
		slices.Sort(out[i])
		out[i] = slices.Compact(out[i])
	}
	return out
}

// first returns the first match of rule i in text, of those starting at
// one of at, that keep does not reject (nil keeps all).
func (sr *startRules) first(i int, text string, at []int, keep func(lo, hi int) bool) (lo, hi int, ok bool) {
	sr.ready()
	sr.each(i, text, at, func(l, h int) bool {
		if keep == nil || keep(l, h) {
			lo, hi, ok = l, h, true
			return false
		}
		return true
	})
	return lo, hi, ok
}

// each calls f with the matches of rule i in text, of those starting at
// one of at, in order, until f returns false. Like FindAllStringIndex,
// it tries no match starting inside the one before.
func (sr *startRules) each(i int, text string, at []int, f func(lo, hi int) bool) {
	sr.ready()
	r := &sr.rules[i]
	if r.atStart == nil || isWholeText(at) {
		for _, m := range r.re.FindAllStringIndex(text, -1) {
			if !f(m[0], m[1]) {
				return
			}
		}
		return
	}
	done := 0
	for _, q := range at {
		if q < done || q >= len(text) || r.may != nil && !r.may(text, q) {
			continue
		}
		var end int
		if p := jumpTo(r.jumps, text, q); p == 0 {
			m := r.atStart.FindStringIndex(text)
			if m == nil {
				continue
			}
			end = m[1]
		} else {
			_, size := utf8.DecodeLastRuneInString(text[:p])
			m := r.inside.FindStringIndex(text[p-size:])
			if m == nil {
				continue
			}
			end = p - size + m[1]
		}
		if !f(q, end) {
			return
		}
		done = end
	}
}

// jumpTo returns where to try a match that starts at q: n characters
// before the end of the run of c that starts there, if one of jumps
// says so (see runJumps), else q.
func jumpTo(jumps []runJump, text string, q int) int {
	if len(jumps) == 0 || q >= len(text) {
		return q
	}
	c, size := utf8.DecodeRuneInString(text[q:])
	for _, j := range jumps {
		if j.c != c {
			continue
		}
		end := q + size
		if size == 1 {
			for end < len(text) && text[end] == text[q] {
				end++
			}
		}
		for end+size <= len(text) && text[end:end+size] == text[q:q+size] {
			end += size
		}
		return max(q, end-j.n*size)
	}
	return q
}

func lastRune(s string) rune {
	r, _ := utf8.DecodeLastRuneInString(s)
	return r
}
