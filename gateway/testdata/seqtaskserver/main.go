// Command seqtaskserver is a stdio MCP server whose task ids count from 1
// in each of its processes, as a server keeping its tasks in a slice
// numbers them: two processes repeat each other's ids. A task-augmented
// tools/call makes a task holding its argument value, which tasks/get
// gives as the task's statusMessage. Its ask tool answers input_required
// with a requestState that holds all it needs (any process takes it), and
// a retry carrying it with "answered" and the state. Used by
// TestStatelessPrincipalsTaskIDsRepeat and
// TestStatelessPrincipalsRequestStateAcrossReplicas.
package main

import (
	"bufio"
	"encoding/json"
	"os"
	"strconv"
)

func main() {
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 1<<20), 1<<20)
	var tasks []string
	for in.Scan() {
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				Name         string            `json:"name"`
				Arguments    map[string]string `json:"arguments"`
				Task         json.RawMessage   `json:"task"`
				TaskID       string            `json:"taskId"`
				RequestState string            `json:"requestState"`
			} `json:"params"`
		}
		if json.Unmarshal(in.Bytes(), &m) != nil || m.ID == nil || m.Method == "" {
			continue
		}
		msg := map[string]any{"jsonrpc": "2.0", "id": m.ID}
		switch n, _ := strconv.Atoi(m.Params.TaskID); {
		case m.Method == "tools/call" && m.Params.Name == "ask" && m.Params.RequestState != "":
			msg["result"] = map[string]any{"resultType": "complete", "content": []any{map[string]any{"type": "text", "text": "answered " + m.Params.RequestState}}}
		case m.Method == "tools/call" && m.Params.Name == "ask":
			msg["result"] = map[string]any{"resultType": "input_required", "requestState": "state-of-" + m.Params.Arguments["value"],
				"inputRequests": map[string]any{"q": map[string]any{"method": "elicitation/create",
					"params": map[string]any{"message": "sure?", "requestedSchema": map[string]any{"type": "object", "properties": map[string]any{}}}}}}
		case m.Method == "tools/call" && m.Params.Task != nil:
			tasks = append(tasks, m.Params.Arguments["value"])
			msg["result"] = map[string]any{"resultType": "task", "taskId": strconv.Itoa(len(tasks)), "status": "working"}
		case m.Method == "tasks/get" && n >= 1 && n <= len(tasks):
			msg["result"] = map[string]any{"taskId": m.Params.TaskID, "status": "completed", "statusMessage": tasks[n-1]}
		case m.Method == "tasks/get":
			msg["error"] = map[string]any{"code": -32602, "message": "no task " + m.Params.TaskID}
		default:
			msg["result"] = map[string]any{}
		}
		out, _ := json.Marshal(msg)
		os.Stdout.Write(append(out, '\n'))
	}
}
