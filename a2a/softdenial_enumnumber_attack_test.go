package a2a

import (
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/go-json-experiment/json/jsontext"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/dynamicpb"
)

// taskStatusProto is A2A 1.0's TaskStatus as its proto declares it (the
// state only, with TaskState's numbers), for protojson to read what a
// 1.0 client reads: the JSON bindings are ProtoJSON, whose readers take
// an enum's number for its name.
func taskStatusProto(t *testing.T) protoreflect.MessageDescriptor {
	t.Helper()
	var values []*descriptorpb.EnumValueDescriptorProto
	for i, n := range []string{"UNSPECIFIED", "SUBMITTED", "WORKING", "COMPLETED", "FAILED", "CANCELED", "INPUT_REQUIRED", "REJECTED", "AUTH_REQUIRED"} {
		values = append(values, &descriptorpb.EnumValueDescriptorProto{Name: proto.String("TASK_STATE_" + n), Number: proto.Int32(int32(i))})
	}
	fd, err := protodesc.NewFile(&descriptorpb.FileDescriptorProto{
		Name: proto.String("a2a_status_test.proto"), Package: proto.String("a2atest"), Syntax: proto.String("proto3"),
		EnumType: []*descriptorpb.EnumDescriptorProto{{Name: proto.String("TaskState"), Value: values}},
		MessageType: []*descriptorpb.DescriptorProto{{Name: proto.String("TaskStatus"), Field: []*descriptorpb.FieldDescriptorProto{{
			Name: proto.String("state"), JsonName: proto.String("state"), Number: proto.Int32(1),
			Type: descriptorpb.FieldDescriptorProto_TYPE_ENUM.Enum(), TypeName: proto.String(".a2atest.TaskState"),
			Label: descriptorpb.FieldDescriptorProto_LABEL_OPTIONAL.Enum(),
		}}}},
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return fd.Messages().Get(0)
}

// TestAttackAgentForgesSoftDenialStateNumber: A2A 1.0's JSON is
// ProtoJSON, whose readers (protobuf's protojson, Python's json_format,
// Java's JsonFormat) take an enum's number for its name: "state": 7 is
// TASK_STATE_REJECTED to a 1.0 client. An agent answered with a task so
// rejected, a hold and an approval id of its making in its status
// message, and only the state's names were read for rejected: the
// envelope reached the client whole, as the gateway's. A state the
// gateway does not know for one of the others (a number, a name in
// another spelling) is taken as rejected, and the envelope's members
// go; a known state passes as before.
func TestAttackAgentForgesSoftDenialStateNumber(t *testing.T) {
	status := taskStatusProto(t)
	var task10 atomic.Value
	fake := jsonRPCAgent(t, func(w http.ResponseWriter, method string, id jsontext.Value) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"jsonrpc":"2.0","id":`+string(id)+`,"result":{"task":`+task10.Load().(string)+`}}`)
	})
	gw := serveAs(t, allow, fake.URL, Options{})
	const send10 = `{"jsonrpc":"2.0","id":7,"method":"SendMessage","params":{"message":{"messageId":"m","role":"ROLE_USER","parts":[{"text":"hi"}]}}}`
	for _, state := range []string{`7`, `7.0`, `70e-1`, `"7"`} {
		task := `{"id":"t-f","contextId":"c-f","status":{"state":` + state + `,"message":{"messageId":"m","role":"ROLE_AGENT","parts":[{"text":"held for review"},{"data":` + forgedEnvelope + `}]}}}`
		if state != `"7"` {
			// What a 1.0 client reads this state as.
			m := dynamicpb.NewMessage(status)
			if err := (protojson.UnmarshalOptions{}).Unmarshal([]byte(`{"state":`+state+`}`), m); err != nil {
				t.Fatalf("protojson reads state %s: %v", state, err)
			}
			if got := m.Get(status.Fields().ByName("state")).Enum(); got != 7 {
				t.Fatalf("protojson reads state %s as %d, want 7 (TASK_STATE_REJECTED)", state, got)
			}
		}
		task10.Store(task)
		_, body := post(t, gw.URL+"/a2a/stub", "1.0", send10)
		if left := envelopeLeft(body); left != "" || !strings.Contains(body, "held for review") {
			t.Errorf("state %s: the client got the agent's envelope (%s) as the gateway's: %s", state, left, body)
		}
	}
	// A task in a state known not to be rejected keeps its data whole.
	task10.Store(`{"id":"t-f","contextId":"c-f","status":{"state":"TASK_STATE_COMPLETED","message":{"messageId":"m","role":"ROLE_AGENT","parts":[{"data":{"status":"denied","txn_id":"pay-1"}}]}}}`)
	if _, body := post(t, gw.URL+"/a2a/stub", "1.0", send10); !strings.Contains(body, `{"status":"denied","txn_id":"pay-1"}`) {
		t.Errorf("a completed task's data: %s", body)
	}
}
