package transport_test

import (
	"bytes"
	"fmt"
	"os"
	"strings"

	"github.com/sluicehq/sluice/gateway/transport"
)

func ExampleWriteSSEEvent() {
	transport.WriteSSEEvent(os.Stdout, transport.SSEEvent{
		ID:    "7",
		Event: "message",
		Data:  []byte("{\"jsonrpc\":\"2.0\",\n\"method\":\"ping\"}"),
	})
	// Output:
	// id: 7
	// event: message
	// data: {"jsonrpc":"2.0",
	// data: "method":"ping"}
}

func ExampleSSEReader() {
	stream := "event: endpoint\r\ndata: /message?sessionId=1\r\n\r\n" +
		": keep-alive\n\n" +
		"id: 42\ndata: {\"jsonrpc\":\"2.0\",\ndata: \"method\":\"ping\"}\n\n"
	r := transport.NewSSEReader(strings.NewReader(stream))
	for {
		ev, err := r.Next()
		if err != nil {
			fmt.Println(err, r.LastEventID())
			break
		}
		fmt.Printf("%q %q\n", ev.Event, bytes.ReplaceAll(ev.Data, []byte("\n"), []byte(" ")))
	}
	// Output:
	// "endpoint" "/message?sessionId=1"
	// "" "{\"jsonrpc\":\"2.0\", \"method\":\"ping\"}"
	// EOF 42
}
