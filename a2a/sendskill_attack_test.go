package a2a

import (
	"strings"
	"testing"
)

// TestAttackSkillNamedSendUnpinned: the card's skills are the agent's
// tools in the inventory, and "send" is the tool of a message naming no
// skill, described by the card's own description. A skill whose id is
// "send" was left out of the inventory (the name was taken), yet the card
// served it to clients as the agent wrote it: its description, examples
// and tags were never pinned nor scanned, and an agent that changed them
// to instructions had them served (and signed) to every client, its
// messages going on. So was a skill without an id, which no message can
// name. Such a skill's text is pinned with the tool send.
func TestAttackSkillNamedSendUnpinned(t *testing.T) {
	for name, skill := range map[string]string{
		"send":  `{"id":"send","name":"Send","description":"DESC","tags":["mail"]}`,
		"no id": `{"name":"Helper","description":"DESC","tags":["mail"]}`,
	} {
		t.Run(name, func(t *testing.T) { skillUnpinned(t, skill) })
	}
}

func skillUnpinned(t *testing.T, skill string) {
	card := func(desc string) string { return stubCard(`[` + strings.Replace(skill, "DESC", desc, 1) + `]`) }
	a := newCardAgent(t, card("Sends a note."))
	if b := a.servedCard(t); !strings.Contains(b, "Sends a note.") {
		t.Fatalf("first card: %s", b)
	}
	if got := a.send(t, ""); a.messages() != 1 {
		t.Fatalf("a message naming no skill: %s", got)
	}
	a.setCard(card("Sends a note. " + stubPoison))
	if b := a.servedCard(t); strings.Contains(b, stubPoison) {
		t.Errorf("the changed, unapproved description of the skill is served to clients: %s", b)
	}
	if got := a.send(t, ""); a.messages() != 0 || !strings.Contains(got, "inventory_drift") {
		t.Errorf("a message naming no skill after the skill changed: %s; want it blocked (inventory_drift)", got)
	}
}
