package transport_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/sluicehq/sluice/gateway/transport"
)

// A stdio upstream is any program that speaks one JSON-RPC message per
// line; cat echoes them.
func ExampleStdioDialer() {
	ctx := context.Background()
	c, err := (&transport.StdioDialer{Command: "cat"}).Dial(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close()
	c.Write(ctx, []byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`))
	msg, _ := c.Read(ctx)
	fmt.Println(string(msg))
	// Output: {"jsonrpc":"2.0","method":"notifications/initialized"}
}

// Read reports how the child ended once its output is used up.
func ExampleExitError() {
	ctx := context.Background()
	d := &transport.StdioDialer{Command: "sh", Args: []string{"-c", `echo '{"jsonrpc":"2.0","method":"bye"}'; exit 3`}}
	c, err := d.Dial(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close()
	for {
		msg, err := c.Read(ctx)
		var exit *transport.ExitError
		if errors.As(err, &exit) {
			fmt.Println("exit code", exit.State.ExitCode())
			return
		}
		fmt.Println(string(msg))
	}
	// Output:
	// {"jsonrpc":"2.0","method":"bye"}
	// exit code 3
}

// A request the upstream never answered because it crashed is answered
// by Restarting instead.
func ExampleRestarting() {
	ctx := context.Background()
	d := &transport.Restarting{
		Dialer:     &transport.StdioDialer{Command: "sh", Args: []string{"-c", "read line; exit 1"}},
		MinBackoff: time.Millisecond,
	}
	c, err := d.Dial(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close()
	c.Write(ctx, []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
	msg, _ := c.Read(ctx)
	var resp struct {
		ID    int
		Error struct{ Code int }
	}
	json.Unmarshal(msg, &resp)
	fmt.Println(resp.ID, resp.Error.Code)
	// Output: 1 -32003
}

// Sluice serves a stdio client on its own stdin and stdout the same way.
func ExampleNewStdioConn() {
	ctx := context.Background()
	in := strings.NewReader("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\n\n")
	c := transport.NewStdioConn(in, os.Stdout, nil)
	defer c.Close()
	for {
		msg, err := c.Read(ctx)
		if err != nil {
			fmt.Println(err)
			return
		}
		var req struct{ ID json.RawMessage }
		json.Unmarshal(msg, &req)
		c.Write(ctx, []byte(`{"jsonrpc":"2.0","id":`+string(req.ID)+`,"result":{}}`))
	}
	// Output:
	// {"jsonrpc":"2.0","id":1,"result":{}}
	// EOF
}
