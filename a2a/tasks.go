package a2a

import (
	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	lru "github.com/hashicorp/golang-lru/v2"
	"github.com/sluicehq/sluice/intercept"
)

// owners remembers which principal created each task, per agent.
type owners struct {
	c *lru.Cache[string, string] // agent + "\x00" + task id -> owner
}

func newOwners(n int) *owners {
	c, _ := lru.New[string, string](n) // n > 0
	return &owners{c: c}
}

func (o *owners) add(agentName, task, owner string) {
	if task != "" {
		o.c.ContainsOrAdd(agentName+"\x00"+task, owner) // the first owner stays
	}
}

// owns reports whether owner created the task. A task the gateway never
// saw created is no one's: not found.
func (o *owners) owns(agentName, task, owner string) bool {
	got, ok := o.c.Get(agentName + "\x00" + task)
	return ok && got == owner
}

// record notes the tasks an answer (a result or a stream event's result)
// creates or names, in both versions' shapes.
func (o *owners) record(agentName, owner string, result jsontext.Value) {
	for _, id := range taskIDs(result) {
		o.add(agentName, id, owner)
	}
}

// taskIDs returns the task ids in a result: a 0.3 Task (kind "task", id),
// a 0.3 event or message (taskId), or a 1.0 wrapper ({"task": {...}},
// {"message"|"statusUpdate"|"artifactUpdate": {... taskId}}).
func taskIDs(result jsontext.Value) []string {
	var ids []string
	if result.Kind() != '{' {
		return nil
	}
	if intercept.StringMember(result, "kind") == "task" {
		ids = append(ids, intercept.StringMember(result, "id"))
	}
	ids = append(ids, intercept.StringMember(result, "taskId"))
	if t := intercept.Member(result, "task"); t.Kind() == '{' {
		ids = append(ids, intercept.StringMember(t, "id"))
	}
	for _, k := range []string{"message", "statusUpdate", "artifactUpdate"} {
		if e := intercept.Member(result, k); e.Kind() == '{' {
			ids = append(ids, intercept.StringMember(e, "taskId"))
		}
	}
	return ids
}

// filterList keeps, of a ListTasks result, the tasks owner created.
func (o *owners) filterList(agentName, owner string, result jsontext.Value) jsontext.Value {
	var r map[string]jsontext.Value
	if err := json.Unmarshal(result, &r); err != nil {
		return nil
	}
	var tasks []jsontext.Value
	if err := json.Unmarshal(r["tasks"], &tasks); err != nil && r["tasks"] != nil {
		return nil
	}
	kept := []jsontext.Value{}
	for _, t := range tasks {
		if o.owns(agentName, intercept.StringMember(t, "id"), owner) {
			kept = append(kept, t)
		}
	}
	b, err := json.Marshal(kept)
	if err != nil {
		return nil
	}
	r["tasks"] = b
	if _, ok := r["totalSize"]; ok {
		r["totalSize"], _ = json.Marshal(len(kept))
	}
	out, err := json.Marshal(r, json.Deterministic(true))
	if err != nil {
		return nil
	}
	return out
}
