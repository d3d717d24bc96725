package a2a

import (
	"strings"
	"testing"
)

// TestAttackDriftedNameServed: a skill (or the card) that changed since
// it was pinned is blocked, and the card clients get has its new text
// withheld: the description, examples (and tags). But its name is text
// the inventory pins too (the tool's title), and the new one was served
// (and signed) to every client: a name may hold instructions as well as
// a description. A drifted skill is shown under its id, a drifted card
// under the agent's configured name.
func TestAttackDriftedNameServed(t *testing.T) {
	card := func(cardName, skillName string) string {
		return `{"name":"` + cardName + `","description":"A stub.","url":"URL/rpc","protocolVersion":"0.3","skills":[{"id":"echo","name":"` + skillName + `","description":"Repeats.","tags":["text"]}]}`
	}
	a := newCardAgent(t, card("stub", "Echo"))
	if b := a.servedCard(t); !strings.Contains(b, `"Echo"`) {
		t.Fatalf("first card: %s", b)
	}
	for _, c := range []struct{ what, card, skill string }{
		{"the skill's name", "stub", stubPoison},
		{"the card's name", stubPoison, "Echo"},
	} {
		a.setCard(card(c.card, c.skill))
		if b := a.servedCard(t); strings.Contains(b, stubPoison) {
			t.Errorf("%s changed since it was pinned, unapproved, and is served to clients: %s", c.what, b)
		}
	}
}
