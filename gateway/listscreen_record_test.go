package gateway

import (
	"context"
	"testing"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/sluicehq/sluice/intercept"
)

// showAll is a ListScreener that withholds nothing.
type showAll struct{}

func (showAll) ObserveTools(string, jsontext.Value) {}
func (showAll) ScreenListed(_, _ string, items []jsontext.Value) []bool {
	show := make([]bool, len(items))
	for i := range show {
		show[i] = true
	}
	return show
}
func (showAll) ScreenInstructions(_, _, _ string) bool { return true }

// TestScreenedListStillRecordsTask: an answer the listing screen reads
// (prompts/list, initialize …) that holds a task handle has it recorded
// as the client's, as any other answer does: the screen's early return
// skipped that.
func TestScreenedListStillRecordsTask(t *testing.T) {
	for _, method := range []string{"prompts/list", "resources/list", "initialize"} {
		t.Run(method, func(t *testing.T) {
			ic := &intercept.Interceptor{Decider: &intercept.StaticDecider{}, Observer: showAll{}}
			if !ic.ScreensList(method) {
				t.Fatalf("ScreensList(%s) = false: the test proves nothing", method)
			}
			cc := intercept.CallContext{Upstream: "u", SessionID: "s1", Agent: "alice"}
			result := jsontext.Value(`{"prompts":[],"resources":[],"task":{"taskId":"t-7","status":"working"}}`)
			raw := jsontext.Value(`{"jsonrpc":"2.0","id":1,"result":` + string(result) + `}`)
			screenAnswer(context.Background(), ic, cc, method, "", jsontext.Value(`1`), "1", raw, result)
			if !ic.OwnsTask(context.Background(), cc, "t-7") {
				t.Errorf("the task handle in a %s answer was not recorded as the client's", method)
			}
		})
	}
}
