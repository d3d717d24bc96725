package inventory

import (
	"crypto/sha256"
	"maps"
	"slices"
	"strings"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// Capability sets: servers list tools according to what the client
// declared it can do (server-everything lists its elicitation tools only
// to a client that declares elicitation, its roots tool only to one that
// declares roots). Were the first listing's names the pin for every
// client, a client declaring more would find the extra tools blocked as
// new, and one declaring less would block the others as removed, for
// everyone. So a pin keeps, besides its tools, the names listed under each
// capability set (Snapshot.Sets): a name first seen under a capability set
// not pinned yet is pinned on first sight, as the first listing was; under
// a pinned set a new name is drift, and so is a pinned name missing. What
// every tool is stays one definition across sets: a tool of the pin that
// differs in any listing, whatever the client declared, is drift.

// maxCapabilitySets bounds the different lists of names the capability
// sets pinned per upstream hold. Each is a window for tools pinned on
// first sight, and a client chooses what it declares: past it, a new
// set's new names are drift, as under a set pinned already. Sets are
// counted by their lists, not their names: a client declaring odd sets
// (an extension of its making, members no client combines) is listed
// what other sets are, and spent no window a legitimate client's set
// needs later (TestAttackCapabilitySetsExhausted). What the lists are is
// the upstream's doing.
const maxCapabilitySets = 16

// maxCapabilitySetKeys bounds the sets pinned per upstream whose list is
// one another set holds already, for memory (each holds up to MaxTools
// names, in a pin every replica loads): past it such a set is not
// pinned (it has no new name; a name missing from its lists is not
// taken as removed). A set with a list of its own is pinned while there
// are fewer than maxCapabilitySets lists.
const maxCapabilitySetKeys = 32

// approvedSet is the key of a pin's Sets that holds the names of the
// tools an operator approved (approvedTools) rather than pinned on a
// capability set's first sight: reviewed, such a tool is new under no
// set (diffSnapshots). No CapabilitySet is it; it counts toward neither
// bound (setRoom).
const approvedSet = "(approved)"

// setRoom reports whether sets, a pin's, may take a capability set
// listing names: a list no set holds yet while there are fewer than
// maxCapabilitySets lists, one a set holds while there are fewer than
// maxCapabilitySetKeys sets. With names nil, whether some list may be
// taken.
func setRoom(sets map[string][]string, names []string) bool {
	lists := make(map[[sha256.Size]byte]bool, len(sets))
	for k, ns := range sets {
		if k != approvedSet {
			lists[listKey(ns)] = true
		}
	}
	if _, ok := sets[approvedSet]; ok {
		sets = maps.Clone(sets)
		delete(sets, approvedSet)
	}
	if names == nil {
		return len(lists) < maxCapabilitySets || len(sets) < maxCapabilitySetKeys
	}
	if lists[listKey(names)] {
		return len(sets) < maxCapabilitySetKeys
	}
	return len(lists) < maxCapabilitySets
}

// listKey identifies a sorted list of names.
func listKey(names []string) [sha256.Size]byte {
	h := sha256.New()
	for _, n := range names {
		h.Write([]byte(n))
		h.Write([]byte{0})
	}
	var k [sha256.Size]byte
	h.Sum(k[:0])
	return k
}

// capabilityRoots are the client capabilities a capability set is made of,
// and capabilityLeaves the members within them it tells apart (MCP
// 2025-03-26 to 2026-07-28: elicitation.form and .url, sampling.tools and
// .context, roots.listChanged, tasks.list and .cancel). Other members
// (experimental, names of the client's making) are not. The extensions a
// client declares (capabilities.extensions: an MCP Apps host's
// io.modelcontextprotocol/ui, to which servers list their UI tools) are,
// by name, at most maxExtensions of them of at most maxExtensionName
// bytes (more, or a longer name, are the one word "extensions"); the
// names are the client's choice, but maxCapabilitySets bounds the sets
// pinned on first sight all the same.
var (
	capabilityRoots  = []string{"elicitation", "roots", "sampling", "tasks"}
	capabilityLeaves = map[string]bool{"form": true, "url": true, "tools": true, "context": true, "listChanged": true,
		"list": true, "cancel": true, "requests": true}
)

const (
	maxExtensions    = 8
	maxExtensionName = 128
)

// CapabilitySet names the capability set of client capabilities (the
// capabilities of initialize, or io.modelcontextprotocol/clientCapabilities
// of a 2026-07-28 request's _meta): the capabilities among elicitation,
// roots, sampling and tasks declared (with an object, or true), their
// known members, and the extensions declared, as
// "elicitation,elicitation.form,extensions/io.modelcontextprotocol/ui,roots",
// sorted. No capabilities, or a value that is not an object, is "". Past
// maxExtensions extensions, or with a longer name, the extensions are the
// one word "extensions" (TestAttackCapabilitySetExtensionsPastBound):
// left out, their tools were listed under the set of none.
func CapabilitySet(caps jsontext.Value) string {
	if caps.Kind() != '{' {
		return ""
	}
	var top map[string]jsontext.Value
	if json.Unmarshal(caps, &top) != nil {
		return ""
	}
	var words []string
	for _, k := range capabilityRoots {
		v, ok := top[k]
		if !ok || !declared(v) {
			continue
		}
		words = append(words, k)
		if v.Kind() != '{' {
			continue
		}
		var sub map[string]jsontext.Value
		if json.Unmarshal(v, &sub) != nil {
			continue
		}
		for _, s := range slices.Sorted(maps.Keys(sub)) {
			if capabilityLeaves[s] && declared(sub[s]) {
				words = append(words, k+"."+s)
			}
		}
	}
	var ext map[string]jsontext.Value
	if v, ok := top["extensions"]; ok && v.Kind() == '{' && json.Unmarshal(v, &ext) == nil {
		var names []string
		for name, v := range ext {
			if len(ext) > maxExtensions || len(name) > maxExtensionName || strings.Contains(name, ",") {
				// Not told apart, but not none either: its server
				// lists it the tools of the extensions it declares.
				names = []string{"extensions"}
				break
			}
			if declared(v) {
				names = append(names, "extensions/"+name)
			}
		}
		words = append(words, names...)
	}
	slices.Sort(words)
	return strings.Join(words, ",")
}

// declared reports whether a capability's value declares it: an object or
// true (false and null do not).
func declared(v jsontext.Value) bool {
	return v.Kind() == '{' || v.Kind() == 't'
}

// setHolds reports whether the pin s holds the capability set key to
// name: a pin from before capability sets were kept holds every set to
// all its names; otherwise the set's names, none when the set is not
// pinned.
func (s *Snapshot) setHolds(key, name string) bool {
	if s.Sets == nil {
		return true
	}
	_, ok := slices.BinarySearch(s.Sets[key], name)
	return ok
}

// setPinned reports whether the pin s has pinned the names of key: every
// set, for a pin from before capability sets were kept.
func (s *Snapshot) setPinned(key string) bool {
	if s.Sets == nil {
		return true
	}
	_, ok := s.Sets[key]
	return ok
}

// toolNames returns the sorted names of s's tools.
func (s *Snapshot) toolNames() []string {
	names := make([]string, len(s.Tools))
	for i, t := range s.Tools {
		names[i] = t.Name
	}
	return names
}

// withSets returns a copy of s whose Sets are sets.
func (s *Snapshot) withSets(sets map[string][]string) *Snapshot {
	c := *s
	c.Sets = sets
	c.ListedWith = ""
	return &c
}

// cloneSets copies sets, names slices included.
func cloneSets(sets map[string][]string) map[string][]string {
	if sets == nil {
		return nil
	}
	c := make(map[string][]string, len(sets))
	for k, v := range sets {
		c[k] = slices.Clone(v)
	}
	return c
}

// addNames returns names (sorted) with more added, sorted, without repeats.
func addNames(names []string, more ...string) []string {
	out := slices.Clone(names)
	for _, n := range more {
		if i, ok := slices.BinarySearch(out, n); !ok {
			out = slices.Insert(out, i, n)
		}
	}
	return out
}

// SetCapabilities returns the smallest client capabilities whose
// CapabilitySet is set (one CapabilitySet returned): each of its words
// declared with {}. With extensionsAsOne, the extensions of set are the
// one word "extensions", declared as an extension whose name has a comma
// (which CapabilitySet does not tell apart): shorter still, whatever the
// names. A sealed session id carries them when the client's own are too
// long (gateway.sealableCaps).
func SetCapabilities(set string, extensionsAsOne bool) jsontext.Value {
	caps := map[string]map[string]jsontext.Value{}
	declare := func(member, name string) {
		if caps[member] == nil {
			caps[member] = map[string]jsontext.Value{}
		}
		if name != "" || member == "extensions" {
			caps[member][name] = jsontext.Value("{}")
		}
	}
	for w := range strings.SplitSeq(set, ",") {
		switch name, ext := strings.CutPrefix(w, "extensions/"); {
		case w == "":
		case ext && !extensionsAsOne:
			declare("extensions", name)
		case ext || w == "extensions":
			declare("extensions", ",")
		default:
			root, leaf, _ := strings.Cut(w, ".")
			declare(root, leaf)
		}
	}
	b, err := json.Marshal(caps, json.Deterministic(true))
	if err != nil {
		return nil
	}
	return b
}
