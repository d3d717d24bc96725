package inventory

import (
	"bytes"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// ChangeKind says how a tool differs from its pinned version.
type ChangeKind string

const (
	ToolAdded   ChangeKind = "added"   // listed now, not pinned
	ToolRemoved ChangeKind = "removed" // pinned, no longer listed
	ToolChanged ChangeKind = "changed" // listed and pinned, different
)

// ToolChange is the drift of one tool.
type ToolChange struct {
	Tool         string        `json:"tool"`
	Kind         ChangeKind    `json:"change"`
	PinnedHash   string        `json:"pinned_hash,omitempty"`
	ObservedHash string        `json:"observed_hash,omitempty"`
	Fields       []FieldChange `json:"fields,omitempty"` // for ToolChanged

	// setAdd marks a ToolAdded of a tool in the pin (pinned under other
	// capability sets) listed to a client of set, a capability set pinned
	// without it: a new name under that set (diffSnapshots).
	setAdd bool
	set    string
}

// FieldChange is a changed member of a tool: "title" or "description",
// with both texts, or "inputSchema", "outputSchema", "annotations",
// "icons", "execution", "_meta" or "unknown" (the members MCP does not
// define, one object), with the changed values inside them.
type FieldChange struct {
	Field    string        `json:"field"`
	Pinned   string        `json:"pinned,omitempty"`
	Observed string        `json:"observed,omitempty"`
	Values   []ValueChange `json:"values,omitempty"`
}

// ValueChange is one changed value inside a JSON member of a tool. Pinned
// is nil for an added value, Observed for a removed one.
type ValueChange struct {
	// Path is a JSON Pointer into the member, "" for the whole member.
	Path     string         `json:"path"`
	Pinned   jsontext.Value `json:"pinned,omitzero"`
	Observed jsontext.Value `json:"observed,omitzero"`
}

// Diff compares the pinned and the observed inventory of one upstream.
type Diff struct {
	Upstream string `json:"upstream"`
	// Pinned is nil when the upstream has no (valid) pinned inventory;
	// then every observed tool counts as added.
	Pinned *SnapshotInfo `json:"pinned"`
	// Observed is nil when no tools/list of the upstream has been seen
	// (and none was stored); then nothing is known to have changed.
	Observed *SnapshotInfo `json:"observed"`
	Changes  []ToolChange  `json:"changes"` // sorted by tool name
	// Instructions are the server's instructions listed since the pin
	// that differ from those pinned, by method (see ScreenInstructions).
	Instructions []InstructionsChange `json:"instructions,omitempty"`
	// ApprovalHash is what approving every change with a hash takes
	// (ApproveHash of AllTools, PinHash): Observed's hash, or, with
	// Instructions, one over it and them.
	ApprovalHash string `json:"approval_hash,omitempty"`
}

// InstructionsChange is the drift of a server's instructions in the
// result of Method (initialize or server/discover).
type InstructionsChange struct {
	Method   string `json:"method"`
	Pinned   string `json:"pinned"`
	Observed string `json:"observed"`
}

// SnapshotInfo summarizes a snapshot.
type SnapshotInfo struct {
	Hash      string    `json:"hash"`
	Tools     int       `json:"tools"`
	CreatedAt time.Time `json:"created_at"`
}

func infoOf(s *Snapshot) *SnapshotInfo {
	if s == nil {
		return nil
	}
	return &SnapshotInfo{Hash: s.Hash, Tools: len(s.Tools), CreatedAt: s.CreatedAt}
}

// Empty reports whether the observed inventory matches the pinned one.
func (d *Diff) Empty() bool {
	return d.Pinned != nil && len(d.Changes) == 0 && len(d.Instructions) == 0
}

// String renders the diff for a terminal, in the spirit of a unified diff:
// "+" for added tools and text, "-" for removed, "~" for changed tools.
// Observed hashes are written in full: they are what ApproveHash and
// PinHash (sluice inventory approve|pin --hash) take.
func (d *Diff) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "upstream %q\n", d.Upstream)
	if d.Pinned != nil {
		fmt.Fprintf(&b, "  pinned   %s (%d tools, %s)\n", short(d.Pinned.Hash), d.Pinned.Tools, d.Pinned.CreatedAt.Format(time.RFC3339))
	} else {
		b.WriteString("  pinned   none\n")
	}
	if d.Observed != nil {
		fmt.Fprintf(&b, "  observed %s (%d tools, %s)\n", d.Observed.Hash, d.Observed.Tools, d.Observed.CreatedAt.Format(time.RFC3339))
	} else {
		b.WriteString("  observed none (no tools/list seen since the gateway started)\n")
	}
	if d.Empty() {
		b.WriteString("no changes\n")
		return b.String()
	}
	for _, c := range d.Changes {
		b.WriteByte('\n')
		writeChange(&b, c, 0)
	}
	for _, c := range d.Instructions {
		pre, oldMid, newMid, post := textDelta(c.Pinned, c.Observed)
		fmt.Fprintf(&b, "\n~ instructions of %s changed\n", c.Method)
		fmt.Fprintf(&b, "      - %s\n", quoteDelta(pre, oldMid, post, 0))
		fmt.Fprintf(&b, "      + %s\n", quoteDelta(pre, newMid, post, 0))
	}
	if len(d.Instructions) > 0 && d.ApprovalHash != "" {
		// The observed hash does not cover the instructions.
		fmt.Fprintf(&b, "\napproval hash %s (the observed list and these instructions)\n", d.ApprovalHash)
	}
	return b.String()
}

// maxEventDelta bounds, in bytes, each changed text of a tool that a drift
// event's diff quotes: the upstream chooses the texts, and each version
// it lists is an event of the audit store.
const maxEventDelta = 4 << 10

// writeChange writes c as Diff.String does, each changed text quoted up
// to limit bytes (0: whole).
func writeChange(b *strings.Builder, c ToolChange, limit int) {
	switch c.Kind {
	case ToolAdded:
		fmt.Fprintf(b, "+ %s  added (%s)\n", visible(c.Tool), c.ObservedHash)
	case ToolRemoved:
		fmt.Fprintf(b, "- %s  removed (was %s)\n", visible(c.Tool), short(c.PinnedHash))
	case ToolChanged:
		names := make([]string, len(c.Fields))
		for i, f := range c.Fields {
			names[i] = f.Field
		}
		fmt.Fprintf(b, "~ %s  changed: %s (%s -> %s)\n", visible(c.Tool), strings.Join(names, ", "), short(c.PinnedHash), c.ObservedHash)
		for _, f := range c.Fields {
			if f.Values == nil {
				pre, oldMid, newMid, post := textDelta(f.Pinned, f.Observed)
				fmt.Fprintf(b, "    %s:\n", f.Field)
				fmt.Fprintf(b, "      - %s\n", quoteDelta(pre, oldMid, post, limit))
				fmt.Fprintf(b, "      + %s\n", quoteDelta(pre, newMid, post, limit))
				continue
			}
			const maxValues = 50
			for i, v := range f.Values {
				if limit > 0 && i == maxValues {
					fmt.Fprintf(b, "    %s: %d more changes\n", f.Field, len(f.Values)-maxValues)
					break
				}
				// JSON escapes control characters, not bidi controls or
				// zero-width ones: spelt out, as in descriptions.
				switch {
				case v.Pinned == nil:
					fmt.Fprintf(b, "    %s %s: + %s\n", f.Field, visible(pathOrRoot(v.Path)), visible(clipTo(string(v.Observed), limit)))
				case v.Observed == nil:
					fmt.Fprintf(b, "    %s %s: - %s\n", f.Field, visible(pathOrRoot(v.Path)), visible(clipTo(string(v.Pinned), limit)))
				case len(v.Pinned) <= 200 && len(v.Observed) <= 200:
					fmt.Fprintf(b, "    %s %s: %s -> %s\n", f.Field, visible(pathOrRoot(v.Path)), visible(string(v.Pinned)), visible(string(v.Observed)))
				default:
					// Clipped alike, a change past the clip would not show:
					// the changed middle is marked, as in a description.
					pre, oldMid, newMid, post := textDelta(string(v.Pinned), string(v.Observed))
					fmt.Fprintf(b, "    %s %s:\n", f.Field, visible(pathOrRoot(v.Path)))
					fmt.Fprintf(b, "      - %s\n", quoteDelta(pre, oldMid, post, limit))
					fmt.Fprintf(b, "      + %s\n", quoteDelta(pre, newMid, post, limit))
				}
			}
		}
	}
}

// clipTo is clip(s, limit), or s whole for limit 0.
func clipTo(s string, limit int) string {
	if limit == 0 {
		return s
	}
	return clip(s, limit)
}

func pathOrRoot(p string) string {
	if p == "" {
		return "(whole)"
	}
	return p
}

func short(h string) string {
	if len(h) > 12 {
		return h[:12]
	}
	return h
}

// quoteDelta writes a text with its changed middle in [[ ]], eliding long
// unchanged context, and the middle past limit bytes (0: none).
func quoteDelta(pre, mid, post string, limit int) string {
	const ctx = 40
	if limit > 0 && len(mid) > limit {
		n := limit
		for n > 0 && !utf8.RuneStart(mid[n]) {
			n--
		}
		mid = fmt.Sprintf("%s… (%d more characters)", mid[:n], utf8.RuneCountInString(mid[n:]))
	}
	if utf8.RuneCountInString(pre) > ctx {
		r := []rune(pre)
		pre = "…" + string(r[len(r)-ctx:])
	}
	if utf8.RuneCountInString(post) > ctx {
		post = string([]rune(post)[:ctx]) + "…"
	}
	return visible(pre) + "[[" + visible(mid) + "]]" + visible(post)
}

// textDelta splits two texts into their common prefix and suffix and the
// differing middles. The split falls on word boundaries where it can, so
// that the middles read as words.
func textDelta(a, b string) (pre, aMid, bMid, post string) {
	ra, rb := []rune(a), []rune(b)
	i := 0
	for i < len(ra) && i < len(rb) && ra[i] == rb[i] {
		i++
	}
	for i > 0 && i < len(ra) && i < len(rb) && !isSpace(ra[i-1]) {
		i--
	}
	j := 0
	for j < len(ra)-i && j < len(rb)-i && ra[len(ra)-1-j] == rb[len(rb)-1-j] {
		j++
	}
	for j > 0 && j < len(ra)-i && j < len(rb)-i && !isSpace(ra[len(ra)-j]) {
		j--
	}
	return string(ra[:i]), string(ra[i : len(ra)-j]), string(rb[i : len(rb)-j]), string(ra[len(ra)-j:])
}

func isSpace(r rune) bool { return r == ' ' || r == '\n' || r == '\t' || r == '\r' }

// diffSnapshots lists the tool changes from pinned to observed, sorted by
// name. A nil pinned snapshot makes every observed tool added; a nil
// observed snapshot means nothing is known to have changed.
func diffSnapshots(pinned, observed *Snapshot) []ToolChange {
	if observed == nil {
		return nil
	}
	var pinnedTools []Tool
	if pinned != nil {
		pinnedTools = pinned.Tools
	}
	var out []ToolChange
	i, j := 0, 0
	for i < len(pinnedTools) || j < len(observed.Tools) {
		switch {
		case j == len(observed.Tools) || i < len(pinnedTools) && pinnedTools[i].Name < observed.Tools[j].Name:
			p := pinnedTools[i]
			if pinned.setHolds(observed.ListedWith, p.Name) {
				// Missing from a list of a capability set it was pinned
				// under; one pinned under other sets only is not listed to
				// this client's.
				out = append(out, ToolChange{Tool: p.Name, Kind: ToolRemoved, PinnedHash: p.Hash})
			}
			i++
		case i == len(pinnedTools) || observed.Tools[j].Name < pinnedTools[i].Name:
			o := observed.Tools[j]
			out = append(out, ToolChange{Tool: o.Name, Kind: ToolAdded, ObservedHash: o.Hash})
			j++
		default:
			p, o := pinnedTools[i], observed.Tools[j]
			switch {
			case !matches(p, o):
				out = append(out, ToolChange{Tool: p.Name, Kind: ToolChanged, PinnedHash: p.Hash, ObservedHash: o.Hash, Fields: diffTool(p, o)})
			case pinned.Sets != nil && pinned.setPinned(observed.ListedWith) && !pinned.setHolds(observed.ListedWith, o.Name) &&
				!pinned.setHolds(approvedSet, o.Name):
				// Pinned under other capability sets only, and listed to
				// a client of a set pinned without it: a new name under
				// that set, as one not in the pin is. A set first seen
				// later that listed it first must not make it no drift
				// to every set (TestAttackCapabilitySetLaundersFirst).
				// One an operator approved is reviewed (approvedSet).
				out = append(out, ToolChange{Tool: o.Name, Kind: ToolAdded, ObservedHash: o.Hash, setAdd: true, set: observed.ListedWith})
			}
			i++
			j++
		}
	}
	return out
}

// diffTool lists the changed members of two versions of a tool.
func diffTool(p, o Tool) []FieldChange {
	var fs []FieldChange
	if p.Title != o.Title {
		fs = append(fs, FieldChange{Field: "title", Pinned: p.Title, Observed: o.Title})
	}
	if p.Description != o.Description {
		fs = append(fs, FieldChange{Field: "description", Pinned: p.Description, Observed: o.Description})
	}
	for _, m := range []struct {
		name string
		p, o jsontext.Value
	}{
		{"inputSchema", p.InputSchema, o.InputSchema},
		{"outputSchema", p.OutputSchema, o.OutputSchema},
		{"annotations", p.Annotations, o.Annotations},
		{"icons", p.Icons, o.Icons},
		{"execution", p.Execution, o.Execution},
		{"_meta", p.Meta, o.Meta},
		{"unknown", p.unknown(), o.unknown()},
	} {
		if !bytes.Equal(m.p, m.o) {
			var vs []ValueChange
			budget := diffBudget * (len(m.p) + len(m.o) + 1024)
			diffValues("", m.p, m.o, &vs, &budget)
			fs = append(fs, FieldChange{Field: m.name, Values: vs})
		}
	}
	return fs
}

// diffBudget bounds the work of diffing two versions of a member, as a
// multiple of their size: each level descended into decodes what is below
// it again, and each change found is written with its path, so that two
// values nested thousands deep (an upstream's answer can be 32 MiB) cost
// thousands of times their size to diff. Past the budget a value is
// reported whole at the path reached. Ordinary schemas, a few levels
// deep, are diffed to their leaves well within it.
const diffBudget = 16

// diffValues appends the differences between two canonical JSON values,
// descending into objects and arrays present on both sides while the
// budget (in bytes read or written) lasts.
func diffValues(path string, a, b jsontext.Value, out *[]ValueChange, budget *int) {
	*budget -= min(len(a), len(b)) + len(path)
	if bytes.Equal(a, b) {
		return
	}
	if *budget < len(a)+len(b) {
		*out = append(*out, ValueChange{Path: path, Pinned: a, Observed: b})
		return
	}
	*budget -= len(a) + len(b)
	switch {
	case kind(a) == '{' && kind(b) == '{':
		var ma, mb map[string]jsontext.Value
		if json.Unmarshal(a, &ma) != nil || json.Unmarshal(b, &mb) != nil {
			break
		}
		keys := slices.Sorted(maps.Keys(ma))
		for k := range mb {
			if _, ok := ma[k]; !ok {
				keys = append(keys, k)
			}
		}
		slices.Sort(keys)
		for _, k := range keys {
			if *budget < 0 {
				// Spent among many members: the rest is this value whole.
				*out = append(*out, ValueChange{Path: path, Pinned: a, Observed: b})
				return
			}
			diffValues(path+"/"+escapePointer(k), ma[k], mb[k], out, budget)
		}
		return
	case kind(a) == '[' && kind(b) == '[':
		var sa, sb []jsontext.Value
		if json.Unmarshal(a, &sa) != nil || json.Unmarshal(b, &sb) != nil {
			break
		}
		for i := range max(len(sa), len(sb)) {
			var x, y jsontext.Value
			if i < len(sa) {
				x = sa[i]
			}
			if i < len(sb) {
				y = sb[i]
			}
			if *budget < 0 {
				*out = append(*out, ValueChange{Path: path, Pinned: a, Observed: b})
				return
			}
			diffValues(fmt.Sprintf("%s/%d", path, i), x, y, out, budget)
		}
		return
	}
	*out = append(*out, ValueChange{Path: path, Pinned: a, Observed: b})
}

func kind(v jsontext.Value) jsontext.Kind {
	if len(v) == 0 {
		return 0
	}
	return v.Kind()
}

func escapePointer(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}
