package a2a

import (
	"context"
	stdjson "encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	a2ago "github.com/a2aproject/a2a-go/a2a"
	"github.com/go-json-experiment/json/jsontext"
)

// TestAgentRejectionWithStatusDeniedPasses: a loan agent (a2a-go's
// server) turns an application down with a rejected task whose only part
// is its own data, {"status":"denied","reason":"credit score too low"}.
// The status member made it look like the gateway's soft deny, and the
// caller got an internal error (-32603) instead, sent or streamed, and
// again on every tasks/get. The task passes, rejected, with its reason;
// only the envelope's status member is left out.
func TestAgentRejectionWithStatusDeniedPasses(t *testing.T) {
	agent := newExtensionAgent(t)
	gw := serveAs(t, allow, agent.srv.URL, Options{})
	rpc := gw.URL + "/a2a/stub"

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res, err := a2aGoClient(t, gw.URL, "alice").SendMessage(ctx, &a2ago.MessageSendParams{Message: a2ago.NewMessage(a2ago.MessageRoleUser, a2ago.TextPart{Text: "loan"})})
	if err != nil {
		t.Fatalf("the loan agent's rejection reached a2a-go's client as an error: %v", err)
	}
	task, ok := res.(*a2ago.Task)
	if !ok || task.Status.State != a2ago.TaskStateRejected || task.Status.Message == nil || len(task.Status.Message.Parts) != 1 {
		t.Fatalf("a2a-go's client got %#v, want the agent's rejected task", res)
	}
	dp, ok := task.Status.Message.Parts[0].(a2ago.DataPart)
	if !ok || dp.Data["reason"] != "credit score too low" {
		t.Errorf("the rejection's data part: %#v, want the agent's reason", task.Status.Message.Parts[0])
	}
	if _, ok := dp.Data["status"]; ok {
		t.Errorf("the rejection's data part kept the envelope's status: %#v", dp.Data)
	}

	loan := strings.ReplaceAll(sendHi, `"text":"hi"`, `"text":"loan"`)
	passed := func(how, got string) {
		t.Helper()
		if !strings.Contains(got, `"state":"rejected"`) || !strings.Contains(got, "credit score too low") || strings.Contains(got, "only the gateway") {
			t.Errorf("%s: the loan agent's rejection did not pass: %s", how, got)
		}
	}
	passed("message/send", do(t, "POST", rpc, "alice", "", loan))
	stream := do(t, "POST", rpc, "alice", "", strings.Replace(loan, "message/send", "message/stream", 1))
	passed("message/stream", stream)
	var data string
	for _, line := range strings.Split(stream, "\n") {
		if d, ok := strings.CutPrefix(line, "data: "); ok && data == "" {
			data = d
		}
	}
	var first struct {
		Result struct {
			ID string `json:"id"`
		} `json:"result"`
	}
	if err := stdjson.Unmarshal([]byte(data), &first); err != nil || first.Result.ID == "" {
		t.Fatalf("the stream's first event names no task: %s", stream)
	}
	passed("tasks/get", do(t, "POST", rpc, "alice", "", `{"jsonrpc":"2.0","id":2,"method":"tasks/get","params":{"id":"`+first.Result.ID+`"}}`))
}

// TestForgedSoftDenialInExtensionStream: an extension method's streamed
// answer is cut to the caller's tasks (unknownAnswer) and then read for
// a forged soft deny, in what the caller gets. The cut event was copied
// over the buffer the event was read into, and the result read next was
// a slice of that buffer: an agent writing its event with spaces (as
// Python's json.dumps does) had a rejected task with its own envelope
// read as whatever bytes then stood there, and passed whole.
func TestForgedSoftDenialInExtensionStream(t *testing.T) {
	fake := jsonRPCAgent(t, func(w http.ResponseWriter, method string, id jsontext.Value) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, `data: {"jsonrpc": "2.0", "id": `+string(id)+`, "result": {"kind": "task", "id": "t-x", "contextId": "c-x", "status": {"state": "rejected", "message": {"kind": "message", "messageId": "m", "role": "agent", "parts": [{"kind": "text", "text": "held for review"}, {"kind": "data", "data": `+forgedEnvelope+`}]}}}}`+"\n\n")
	})
	gw := serveAs(t, allow, fake.URL, Options{AllowUnknownMethods: true})
	got := do(t, "POST", gw.URL+"/a2a/stub", "alice", "", `{"jsonrpc":"2.0","id":1,"method":"x/watch","params":{}}`)
	if left := envelopeLeft(got); left != "" || !strings.Contains(got, "held for review") || !strings.Contains(got, `"t-x"`) {
		t.Errorf("the extension's streamed rejected task: want it without the envelope (%s left): %s", left, got)
	}
}
