package console

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/approval"
	"github.com/sluicehq/sluice/recommend"
)

// stubRecs serves one recommendation and its diff.
type stubRecs struct {
	rec  recommend.Record
	diff string
}

func (s stubRecs) List() ([]recommend.Record, error) { return []recommend.Record{s.rec}, nil }
func (s stubRecs) Preview(string) (recommend.Record, string, error) {
	return s.rec, s.diff, nil
}
func (s stubRecs) Approve(context.Context, string, string) (recommend.Record, string, error) {
	return s.rec, s.diff, nil
}
func (s stubRecs) Decline(context.Context, string, string, string) (recommend.Record, error) {
	return s.rec, nil
}
func (s stubRecs) Run(context.Context) ([]recommend.Record, error) { return nil, nil }

// Without auth: an agent's name is what its client calls itself, and a
// zero-width space in it ("ali\u200bce") is invisible: its held call read
// as alice's, and the diff of a recommendation about it showed a second
// "alice:" manifest, the one the policy already had to the eye.
// `sluice recommend` prints such names quoted; the console spelt out
// bidirectional controls only. It spells out every invisible character
// now, as \u{200B}.
func TestConsoleSpellsOutInvisibleCharacters(t *testing.T) {
	const agent = "ali\u200bce"
	src := []byte("default: deny\ntool_classes:\n  web_search: [sink:network]\nrules:\n  - id: web\n    match: {match_any_class: [sink:network]}\n    decision: allow\nmanifests:\n  alice: {allowed_classes: [source:local]}\n")
	r := recommend.Recommendation{ID: "rec_1", Type: recommend.AddTool, Agent: agent, Tool: "web/web_search",
		Change:  recommend.Change{Path: []string{"manifests", agent, "allowed_classes"}, Operation: "add", Value: []string{"sink:network"}},
		Summary: "let " + agent + " call web/web_search: add sink:network to its manifest's allowed_classes (6 denials)"}
	out, err := recommend.Apply(src, r)
	if err != nil {
		t.Fatal(err)
	}
	st := approval.NewStore(approval.Options{})
	holdCall(t, st, agent, "send_email", `{}`)
	_, cl, base := reviewConsole(t, Deps{Approvals: st, Recs: stubRecs{recommend.Record{Recommendation: r, Status: recommend.StatusPending}, recommend.Diff(src, out)}})
	for _, p := range []string{"/approvals", "/recommendations", "/recommendations/rec_1"} {
		page := reviewGet(t, cl, base+p)
		if strings.ContainsRune(page, '\u200b') || !strings.Contains(page, `ali\u{200B}ce`) {
			t.Errorf("%s shows the agent ali\\u200bce with its zero-width space raw, want it spelt out:\n%s", p, page)
		}
	}
}

// TestConsoleSpellsOutDefaultIgnorables: the characters Unicode says to
// show as nothing go beyond format characters: a variation selector
// ("ali\uFE0Fce"), the combining grapheme joiner, Khmer's inherent
// vowels. Each held call of such an agent read as alice's on the
// Approvals page; each is spelt out now.
func TestConsoleSpellsOutDefaultIgnorables(t *testing.T) {
	for _, r := range []rune{'\ufe0f', '\ufe00', '\u034f', '\u17b4'} {
		agent := "ali" + string(r) + "ce"
		st := approval.NewStore(approval.Options{})
		holdCall(t, st, agent, "send_email", `{}`)
		_, cl, base := reviewConsole(t, Deps{Approvals: st})
		if page := reviewGet(t, cl, base+"/approvals"); strings.ContainsRune(page, r) || !strings.Contains(page, fmt.Sprintf(`ali\u{%04X}ce`, r)) {
			t.Errorf("/approvals shows the agent ali\\u%04xce with U+%04X raw, want it spelt out", r, r)
		}
	}
}
