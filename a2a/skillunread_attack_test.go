package a2a

import (
	"strings"
	"testing"
)

// TestAttackCardSkillsUnreadable: the card's skills go to the inventory
// as they are read with their fields' types (a description a string,
// tags a list of strings). A card one of whose skills the gateway could
// not read so (tags a string, a skill that is not an object) was not
// observed at all: a pinned skill changed beside it was no drift, its new
// text served (and signed) to every client, and messages naming no skill
// went on. Such a card is refused.
func TestAttackCardSkillsUnreadable(t *testing.T) {
	poison := stubPoison
	a := newCardAgent(t, stubCard(`[{"id":"echo","name":"Echo","description":"Repeats.","tags":["text"]}]`))
	if b := a.servedCard(t); !strings.Contains(b, "Repeats.") {
		t.Fatalf("first card: %s", b)
	}
	for name, changed := range map[string]string{
		"tags a string":        `[{"id":"echo","name":"Echo","description":"Repeats. ` + poison + `","tags":["text"]},{"id":"x","description":"x","tags":"x"}]`,
		"skill a string":       `[{"id":"echo","name":"Echo","description":"Repeats. ` + poison + `","tags":["text"]},"x"]`,
		"description a number": `[{"id":"echo","name":"Echo","description":"Repeats. ` + poison + `","tags":["text"]},{"id":"x","description":5}]`,
	} {
		a.setCard(stubCard(changed))
		a.messages()
		if b := a.servedCard(t); strings.Contains(b, poison) {
			t.Errorf("%s: the changed, unapproved skill is served to clients: %s", name, b)
		}
		if got := a.send(t, ""); a.messages() != 0 {
			t.Errorf("%s: a message reached the agent whose card the gateway could not read: %s", name, got)
		}
	}
}
