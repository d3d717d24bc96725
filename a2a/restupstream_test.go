package a2a

import (
	"bytes"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/go-json-experiment/json/jsontext"
)

// TestRestCall: each A2A 1.0 JSON-RPC method becomes the HTTP+JSON request
// the SDK's REST server routes (the inverse of restRoute).
func TestRestCall(t *testing.T) {
	for _, tc := range []struct {
		method, params, verb, path, body string
		stream                           bool
	}{
		{"SendMessage", `{"message":{"messageId":"m"}}`, "POST", "/message:send", `{"message":{"messageId":"m"}}`, false},
		{"SendStreamingMessage", `{"message":{"messageId":"m"},"tenant":"acme"}`, "POST", "/acme/message:stream", `{"message":{"messageId":"m"}}`, true},
		{"GetTask", `{"id":"t/1","historyLength":3}`, "GET", "/tasks/t%2F1?historyLength=3", "", false},
		{"CancelTask", `{"id":"t1"}`, "POST", "/tasks/t1:cancel", "", false},
		{"SubscribeToTask", `{"id":"t1"}`, "POST", "/tasks/t1:subscribe", "", true},
		{"ListTasks", `{"contextId":"c","pageSize":5,"includeArtifacts":true}`, "GET", "/tasks?contextId=c&includeArtifacts=true&pageSize=5", "", false},
		{"CreateTaskPushNotificationConfig", `{"taskId":"t1","url":"https://x"}`, "POST", "/tasks/t1/pushNotificationConfigs", `{"url":"https://x"}`, false},
		{"GetTaskPushNotificationConfig", `{"taskId":"t1","id":"c1"}`, "GET", "/tasks/t1/pushNotificationConfigs/c1", "", false},
		{"DeleteTaskPushNotificationConfig", `{"taskId":"t1","id":"c1"}`, "DELETE", "/tasks/t1/pushNotificationConfigs/c1", "", false},
		{"GetExtendedAgentCard", `{}`, "GET", "/extendedAgentCard", "", false},
	} {
		verb, path, body, stream, err := restCall(tc.method, jsontext.Value(tc.params))
		if err != nil || verb != tc.verb || path != tc.path || string(body) != tc.body || stream != tc.stream {
			t.Errorf("%s: got %s %s %s stream=%v err=%v, want %s %s %s stream=%v", tc.method, verb, path, body, stream, err, tc.verb, tc.path, tc.body, tc.stream)
		}
	}
	for _, bad := range []struct{ method, params string }{{"GetTask", `{}`}, {"message/send", `{}`}, {"GetTaskPushNotificationConfig", `{"taskId":"t"}`},
		// Dot segments would reach other paths of the agent's origin.
		{"GetTask", `{"id":".."}`}, {"SendMessage", `{"tenant":"..","message":{}}`}, {"GetTaskPushNotificationConfig", `{"taskId":"t","id":".."}`}} {
		if _, _, _, _, err := restCall(bad.method, jsontext.Value(bad.params)); err == nil {
			t.Errorf("%s %s: want an error", bad.method, bad.params)
		}
	}
}

// TestRestToRPC: a REST answer read back as JSON-RPC: a body is the
// result, a google.rpc.Status the error (its A2A reason giving the code),
// a stream's events responses, an "error" event an error response.
func TestRestToRPC(t *testing.T) {
	answer := func(status int, ct, body string) string {
		resp := &http.Response{StatusCode: status, Header: http.Header{"Content-Type": {ct}}, Body: io.NopCloser(strings.NewReader(body))}
		if err := restToRPC(resp, jsontext.Value(`7`), 1<<20); err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}
	if got := answer(200, "application/json", `{"id":"t1"}`); got != `{"id":7,"jsonrpc":"2.0","result":{"id":"t1"}}` {
		t.Errorf("result: %s", got)
	}
	if got := answer(204, "", ``); !strings.Contains(got, `"result":{}`) {
		t.Errorf("204: %s", got)
	}
	notFound := `{"error":{"code":404,"status":"NOT_FOUND","message":"Task not found","details":[{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"TASK_NOT_FOUND"}]}}`
	if got := answer(404, "application/json", notFound); !strings.Contains(got, `"code":-32001`) || !strings.Contains(got, "Task not found") {
		t.Errorf("404: %s", got)
	}
	if got := answer(409, "application/json", `{"error":{"code":409,"status":"FAILED_PRECONDITION","message":"no","details":[{"reason":"TASK_NOT_CANCELABLE"}]}}`); !strings.Contains(got, `"code":-32002`) {
		t.Errorf("409: %s", got)
	}
	stream := answer(200, "text/event-stream", "data: {\"task\":{\"id\":\"t1\"}}\n\n: comment\n\nevent: error\ndata: {\"error\":{\"code\":404,\"message\":\"gone\",\"details\":[{\"reason\":\"TASK_NOT_FOUND\"}]}}\n\n")
	events := strings.Split(strings.TrimSpace(stream), "\n\n")
	if len(events) != 2 || events[0] != `data: {"id":7,"jsonrpc":"2.0","result":{"task":{"id":"t1"}}}` || !strings.Contains(events[1], `"code":-32001`) {
		t.Errorf("stream: %q", stream)
	}
	big := &http.Response{StatusCode: 200, Header: http.Header{}, Body: io.NopCloser(bytes.NewReader(make([]byte, 100)))}
	if err := restToRPC(big, jsontext.Value(`1`), 10); err == nil {
		t.Error("an answer over the limit: want an error")
	}
}
