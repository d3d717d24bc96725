package a2a

import (
	"strings"
	"testing"
)

// TestAttackSkillTagsUnpinned: a card's skills are the agent's tools in
// the inventory, pinned on first sight, so that a skill whose entry
// changes is blocked and its new text withheld from the card clients
// read. The pin held a skill's name, description and examples, but not
// its tags, which the card serves (and the gateway signs) to agents
// that read it to pick a skill: an agent that changed a pinned skill's
// tags to instructions reached every client with them, unreviewed, and
// messages naming the skill went on.
func TestAttackSkillTagsUnpinned(t *testing.T) {
	card := func(tags string) string {
		return stubCard(`[{"id":"echo","name":"Echo","description":"Repeats.","tags":` + tags + `}]`)
	}
	a := newCardAgent(t, card(`["text"]`))
	if b := a.servedCard(t); !strings.Contains(b, `"text"`) {
		t.Fatalf("first card: %s", b)
	}
	if got := a.send(t, "echo"); a.messages() != 1 {
		t.Fatalf("a message naming the pinned skill: %s", got)
	}
	a.setCard(card(`["text","` + stubPoison + `"]`))
	if b := a.servedCard(t); strings.Contains(b, stubPoison) {
		t.Errorf("the changed, unapproved tags of a pinned skill are served to clients: %s", b)
	}
	if got := a.send(t, "echo"); a.messages() != 0 || !strings.Contains(got, "inventory_drift") {
		t.Errorf("a message naming the skill whose tags changed: %s; want it blocked (inventory_drift)", got)
	}
}
