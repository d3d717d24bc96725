package e2e

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/a2a"
	"github.com/a2aproject/a2a-go/a2aclient"
	"github.com/a2aproject/a2a-go/a2aclient/agentcard"
)

// a2aGoRun drives a2a-go's client (A2A 0.3, JSON-RPC) against base: it
// resolves the card, sends a message, streams one, gets the task back and
// returns what it saw, with ids left out so that runs compare.
func a2aGoRun(t *testing.T, base string) map[string]any {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	card, err := agentcard.DefaultResolver.Resolve(ctx, base)
	if err != nil {
		t.Fatalf("resolve %s: %v", base, err)
	}
	c, err := a2aclient.NewFromCard(ctx, card)
	if err != nil {
		t.Fatalf("client for %s: %v", card.URL, err)
	}
	defer c.Destroy()
	out := map[string]any{"card_name": card.Name, "skills": len(card.Skills)}
	res, err := c.SendMessage(ctx, &a2a.MessageSendParams{Message: a2a.NewMessage(a2a.MessageRoleUser, a2a.TextPart{Text: "hello from a2a-go"})})
	if err != nil {
		t.Fatalf("send through %s: %v", base, err)
	}
	task, ok := res.(*a2a.Task)
	if !ok {
		t.Fatalf("send: %T, want a task", res)
	}
	out["send_state"] = string(task.Status.State)
	out["send_text"] = artifactText(task.Artifacts)
	var kinds []string
	for ev, err := range c.SendStreamingMessage(ctx, &a2a.MessageSendParams{Message: a2a.NewMessage(a2a.MessageRoleUser, a2a.TextPart{Text: "streamed"})}) {
		if err != nil {
			t.Fatalf("stream through %s: %v", base, err)
		}
		b, _ := json.Marshal(ev)
		var k struct {
			Kind string `json:"kind"`
		}
		_ = json.Unmarshal(b, &k)
		kinds = append(kinds, k.Kind)
	}
	out["stream"] = strings.Join(kinds, ",")
	got, err := c.GetTask(ctx, &a2a.TaskQueryParams{ID: task.ID})
	if err != nil {
		t.Fatalf("get through %s: %v", base, err)
	}
	out["get_state"] = string(got.Status.State)
	return out
}

func artifactText(arts []*a2a.Artifact) string {
	var b strings.Builder
	for _, a := range arts {
		for _, p := range a.Parts {
			if tp, ok := p.(a2a.TextPart); ok {
				b.WriteString(tp.Text)
			}
		}
	}
	return b.String()
}

// TestA2AGoClientThroughGateway: a2a-go's client (A2A 0.3 over JSON-RPC)
// gets the same answers from the @a2a-js/sdk agent directly and through
// Sluice: card, send, stream, get.
func TestA2AGoClientThroughGateway(t *testing.T) {
	agent := startAgent(t)
	gw := a2aGateway(t, allowAll, agent)
	direct := a2aGoRun(t, agent)
	if direct["send_text"] != "echo: hello from a2a-go" || direct["send_state"] != "completed" {
		t.Fatalf("direct run: %v", direct)
	}
	through := a2aGoRun(t, gw+"/a2a/echo")
	t.Logf("through Sluice: %v", through)
	if through["stream"] == "" || through["get_state"] != "completed" || through["skills"] != 1 {
		t.Errorf("through Sluice: %v", through)
	}
	for k, v := range direct {
		if through[k] != v {
			t.Errorf("%s: direct %v, through Sluice %v", k, v, through[k])
		}
	}
}
