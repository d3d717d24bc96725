package transport_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/sluicehq/sluice/gateway/transport"
)

func ExampleAcceptWS() {
	ctx := context.Background()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := transport.AcceptWS(w, r, nil)
		if err != nil {
			return // AcceptWS has answered
		}
		defer c.Close()
		for {
			msg, err := c.Read(ctx)
			if err != nil {
				return
			}
			c.Write(ctx, msg) // an echo server
		}
	}))
	defer srv.Close()

	c, err := (&transport.WSDialer{URL: "ws" + strings.TrimPrefix(srv.URL, "http")}).Dial(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close()
	c.Write(ctx, []byte(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
	msg, _ := c.Read(ctx)
	fmt.Println(string(msg))
	// Output: {"jsonrpc":"2.0","id":1,"method":"ping"}
}
