package a2a

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/sluicehq/sluice/intercept"
)

// Methods the gateway does not know (AllowUnknownMethods): an agent's
// extensions name tasks and conversations in shapes no A2A method uses (a
// list of ids, a task object, a filter), and answer with tasks under
// names of their own. So the gateway reads them at any depth, by what
// names them, not by where A2A methods put them: every task and
// conversation such a request names must be the caller's, and every task
// its answer lists is cut to the caller's.

// refKind is what an id an unknown method's params name is taken for.
type refKind int

const (
	refTask    refKind = iota // named as a task: must be the caller's
	refContext                // named as a conversation: must be the caller's
	refID                     // an id the method may mean otherwise: must not be another's task or conversation
)

type idRef struct {
	id   string
	kind refKind
}

// maxNamedIDs bounds the task and conversation ids one unknown method's
// params may name: each is looked up, in the shared store too.
const maxNamedIDs = 256

// maxWalkDepth bounds how deep the gateway reads an unknown method's
// params and answer, and an answer for a forged soft deny: each level
// re-reads all that is under it, so a value nested thousands deep cost
// as many readings of the whole.
const maxWalkDepth = 64

// foldKey is k as a reader matching member names loosely takes it: in
// any case (Go's encoding/json folds "ſ" to "s" and "K", the Kelvin sign,
// to "k"), snake or kebab case.
func foldKey(k string) string {
	return strings.Map(func(r rune) rune {
		switch r {
		case '_', '-':
			return -1
		case 'ſ':
			return 's'
		case 'K':
			return 'k'
		}
		return r
	}, strings.ToLower(k))
}

// taskKeys and contextKeys are the folded member names that name tasks
// and conversations, by one id or a list of them.
var (
	taskKeys    = map[string]bool{"taskid": true, "taskids": true, "referencetaskid": true, "referencetaskids": true}
	contextKeys = map[string]bool{"contextid": true, "contextids": true}
)

// namedIDs returns the task and conversation ids v, an unknown method's
// params, names at any depth: under a member naming a task or a
// conversation (taskId, taskIds, referenceTaskIds, contextId, contextIds,
// in any case, snake or kebab case), one id or a list; the id of a task
// object (one of kind "task", or under a member "task" or "tasks") or of
// a context object ("context", "contexts"); a resource name or parent
// "tasks/{id}"; and, as ids the method may mean otherwise (refID), any
// other "id" and a string (or list of them) under a member "task",
// "tasks", "context" or "contexts" (a description, maybe); an integer
// there, or as a task or context object's id, is the id it spells to a
// reader coercing it (7 is "7"), taken as one the method may mean
// otherwise. A member naming tasks or
// conversations that is neither a string nor a list of strings is
// refused: an agent may read 7 as "7".
func namedIDs(v jsontext.Value) ([]idRef, error) {
	var refs []idRef
	seen := map[idRef]bool{}
	add := func(id string, kind refKind) error {
		r := idRef{id, kind}
		if id == "" || seen[r] {
			return nil
		}
		if len(refs) == maxNamedIDs {
			return fmt.Errorf("params name more than %d task or conversation ids; the gateway checks each one", maxNamedIDs)
		}
		seen[r] = true
		refs = append(refs, r)
		return nil
	}
	var walk func(v jsontext.Value, parent string, at *jsonPath, depth int) error
	walk = func(v jsontext.Value, parent string, at *jsonPath, depth int) error {
		if k := v.Kind(); (k == '[' || k == '{') && depth == maxWalkDepth {
			return fmt.Errorf("params nest deeper than %d levels (at %s), past what the gateway reads for the tasks they name", maxWalkDepth, at)
		}
		switch v.Kind() {
		case '[':
			return intercept.EachElement(v, func(i int, e jsontext.Value) error {
				return walk(e, parent, &jsonPath{up: at, index: i}, depth+1)
			})
		case '"', '0':
			id, ok := idText(v)
			switch parent {
			case "task", "tasks", "context", "contexts":
				if ok {
					return add(id, refID)
				}
			}
			return nil
		case '{':
		default:
			return nil
		}
		idKind := refID
		switch {
		case parent == "task" || parent == "tasks" || strings.EqualFold(intercept.StringMember(v, "kind"), "task"):
			idKind = refTask
		case parent == "context" || parent == "contexts":
			idKind = refContext
		}
		return intercept.EachMember(v, func(k string, m jsontext.Value) error {
			fk, path := foldKey(k), &jsonPath{up: at, key: k, member: true}
			var err error
			switch {
			case taskKeys[fk] || contextKeys[fk]:
				kind, what := refTask, "task"
				if contextKeys[fk] {
					kind, what = refContext, "conversation"
				}
				if m.Kind() == '"' {
					return add(unquote(m), kind)
				}
				if m.Kind() == 'n' {
					return nil
				}
				bad := m.Kind() != '['
				_ = intercept.EachElement(m, func(_ int, e jsontext.Value) error {
					if e.Kind() != '"' {
						bad = true
						return nil
					}
					if err == nil {
						err = add(unquote(e), kind)
					}
					return nil
				})
				if bad {
					return fmt.Errorf("%s must be a %s id or an array of %s ids", path, what, what)
				}
				return err
			case fk == "id" && m.Kind() == '"':
				err = add(unquote(m), idKind)
			case fk == "id" && idKind != refID:
				// A task's or a conversation's id spelt as a number, which
				// a reader coerces: not another's, and maybe the method's
				// own (an extension's own numbered items; any other
				// object's number is the method's).
				if id, ok := idText(m); ok {
					err = add(id, refID)
				}
			case (fk == "name" || fk == "parent") && m.Kind() == '"':
				if p, ok := strings.CutPrefix(unquote(m), "tasks/"); ok {
					id, _, _ := strings.Cut(p, "/")
					err = add(id, refTask)
				}
			}
			if err != nil {
				return err
			}
			return walk(m, fk, path, depth+1)
		})
	}
	if err := walk(v, "", nil, 0); err != nil {
		return nil, err
	}
	return refs, nil
}

// idText is v as an id: a string, or an integer, as a reader coercing
// one to a string spells it (7, 7.0 and 7e0 are "7" to JavaScript);
// false for anything else.
func idText(v jsontext.Value) (string, bool) {
	switch v.Kind() {
	case '"':
		return unquote(v), true
	case '0':
		f, err := strconv.ParseFloat(string(v), 64)
		if err != nil || f != math.Trunc(f) || math.Abs(f) > 1<<53 {
			return "", false
		}
		return strconv.FormatInt(int64(f), 10), true
	}
	return "", false
}

// jsonPath is where in params a value is (nil: params itself), spelt
// only for an error: built for every member, a path as long as the keys
// above it cost the gateway, for each of an object's members under a long
// key, that key again.
type jsonPath struct {
	up     *jsonPath
	key    string // a member's name, if member
	index  int    // an element's index, if not member
	member bool
}

// maxPathText bounds a path as an error spells it.
const maxPathText = 256

func (p *jsonPath) String() string {
	if p == nil {
		return "params"
	}
	var parts []string
	for ; p != nil; p = p.up {
		if p.member {
			parts = append(parts, "."+p.key)
		} else {
			parts = append(parts, fmt.Sprintf("[%d]", p.index))
		}
	}
	slices.Reverse(parts)
	s := strings.TrimPrefix(strings.Join(parts, ""), ".")
	if len(s) > maxPathText {
		s = strings.ToValidUTF8(s[:maxPathText], "") + "…"
	}
	return s
}

// ownState is whose the gateway knows a task (or conversation) to be.
type ownState int

const (
	ownedByNoOne  ownState = iota // no owner recorded
	ownedByCaller                 // the caller's
	ownedByOther                  // another principal's
	ownerUnknown                  // the shared store did not answer, or was not asked
)

// whose tells whose task (a contextKey: conversation) is, asking the
// shared store only if ask; asked reports whether it did.
func (o *owners) whose(ctx context.Context, agentName, task, owner string, ask bool) (s ownState, asked bool) {
	key := agentName + "\x00" + task
	state := func(owns bool) ownState {
		if owns {
			return ownedByCaller
		}
		return ownedByOther
	}
	if known, owns := o.table(task).Owns(key, owner); known {
		return state(owns), false
	}
	if known, owns := o.rejected.Owns(key, owner); known {
		return state(owns), false
	}
	switch {
	case o.shared == nil:
		return ownedByNoOne, false
	case !ask:
		return ownerUnknown, false
	}
	known, owns, failed := o.ownsShared(ctx, agentName, task, key, owner)
	switch {
	case failed:
		return ownerUnknown, true
	case !known:
		return ownedByNoOne, true
	}
	return state(owns), true
}

// unknownAnswer is result, an agent's answer to a method the gateway does
// not know (each event of a stream), as the caller may have it. Of every
// array, the tasks (objects of kind "task", or with a status object's
// state) that are not the caller's are left out, as ListTasks' are, and
// so are objects with an id under a member "task" or "tasks" that are
// another's task and items naming another's task or conversation
// (taskId, contextId); a count beside the one array cut (totalSize,
// total, count, in any case) is made the number kept. nil if what is
// left still names another's task or conversation (or, the shared store
// not answering, anyone's) at any depth, or nests deeper than
// maxWalkDepth.
func (g *Gateway) unknownAnswer(ctx context.Context, agentName, owner string, result jsontext.Value) jsontext.Value {
	lookups := 0
	whose := func(id string) ownState {
		s, asked := g.tasks.whose(ctx, agentName, id, owner, lookups < maxListLookups)
		switch {
		case s == ownerUnknown && asked:
			lookups = maxListLookups // the store does not answer: ask no more
		case asked:
			lookups++
		}
		return s
	}
	// task is the id of v, an object under the member parent (folded),
	// if v is a task: surely one (of kind "task", or with a status
	// object's state), or, under a member "task" or "tasks", maybe.
	task := func(v jsontext.Value, parent string) (id string, surely bool) {
		if v.Kind() != '{' {
			return "", false
		}
		id, _ = idText(intercept.Member(v, "id"))
		st := intercept.Member(v, "status")
		switch {
		case strings.EqualFold(intercept.StringMember(v, "kind"), "task") || (st.Kind() == '{' && intercept.Member(st, "state") != nil):
			return id, true
		case parent == "task" || parent == "tasks":
			return id, false
		}
		return "", false
	}
	// names reports whether v, an object, names a task or a conversation
	// (by a member naming one, directly) that is not the caller's to read.
	names := func(v jsontext.Value) bool {
		found := false
		_ = intercept.EachMember(v, func(k string, m jsontext.Value) error {
			fk := foldKey(k)
			id, ok := idText(m)
			if !ok || !(taskKeys[fk] || contextKeys[fk]) {
				return nil
			}
			if contextKeys[fk] {
				id = contextKey(id)
			}
			if s := whose(id); s == ownedByOther || s == ownerUnknown {
				found = true
			}
			return nil
		})
		return found
	}
	// walk returns v as the caller may have it, whether that differs
	// from v, and, for an array some of whose items it left out, how many
	// it kept (cut); ok false if v may not be had at all.
	type walked struct {
		v       jsontext.Value
		changed bool
		cut     bool
		kept    int
	}
	var walk func(v jsontext.Value, parent string, depth int) (walked, bool)
	walk = func(v jsontext.Value, parent string, depth int) (walked, bool) {
		if k := v.Kind(); (k == '[' || k == '{') && depth == maxWalkDepth {
			return walked{}, false // deeper than the gateway reads
		}
		switch v.Kind() {
		case '[':
			var elems []jsontext.Value
			w := walked{v: v}
			err := intercept.EachElement(v, func(_ int, e jsontext.Value) error {
				// A list's tasks are the caller's, as ListTasks' are; one
				// that may not be a task, unless another's.
				leave := false
				if id, surely := task(e, parent); id != "" {
					s := whose(id)
					leave = s == ownedByOther || s == ownerUnknown || (surely && s != ownedByCaller)
				}
				if leave || (e.Kind() == '{' && names(e)) {
					w.changed, w.cut = true, true
					return nil
				}
				out, ok := walk(e, parent, depth+1)
				if !ok {
					return errUnsafe
				}
				w.changed = w.changed || out.changed
				elems = append(elems, out.v)
				return nil
			})
			if err != nil {
				return w, false
			}
			if w.kept = len(elems); !w.changed {
				return w, true
			}
			if elems == nil {
				elems = []jsontext.Value{}
			}
			b, err := json.Marshal(elems)
			w.v = b
			return w, err == nil
		case '{':
			if id, _ := task(v, parent); id != "" {
				if s := whose(id); s == ownedByOther || s == ownerUnknown {
					return walked{}, false
				}
			}
			if names(v) {
				return walked{}, false
			}
			changed := map[string]jsontext.Value{}
			cuts, kept := 0, 0
			err := intercept.EachMember(v, func(k string, m jsontext.Value) error {
				out, ok := walk(m, foldKey(k), depth+1)
				if !ok {
					return errUnsafe
				}
				if out.changed {
					changed[k] = out.v
				}
				if out.cut {
					cuts, kept = cuts+1, out.kept
				}
				return nil
			})
			if err != nil {
				return walked{}, false
			}
			if len(changed) == 0 {
				return walked{v: v}, true
			}
			all := map[string]jsontext.Value{}
			if json.Unmarshal(v, &all) != nil {
				return walked{}, false
			}
			for k, out := range changed {
				all[k] = out
			}
			if cuts == 1 {
				// The count beside the one list cut: the caller's.
				for k, m := range all {
					switch foldKey(k) {
					case "totalsize", "total", "count", "totalcount":
						if m.Kind() == '0' {
							all[k], _ = json.Marshal(kept)
						}
					}
				}
			}
			b, err := json.Marshal(all, json.Deterministic(true))
			return walked{v: b, changed: true}, err == nil
		}
		return walked{v: v}, true
	}
	if len(result) == 0 {
		return result
	}
	out, ok := walk(result, "", 0)
	if !ok {
		return nil
	}
	return out.v
}

var errUnsafe = errors.New("not the caller's")
