package intercept

import (
	"maps"
	"strings"
	"testing"
)

// TestParamHeaders: the Mcp-Param-* headers a tools/call carries are
// written from its arguments and its tool's x-mcp-header marks as
// SEP-2243 (and the go-sdk client) encode them.
func TestParamHeaders(t *testing.T) {
	i := &Interceptor{}
	i.ObserveTools("up", []byte(`{"tools":[{"name":"t","inputSchema":{"type":"object","properties":{
		"s":{"type":"string","x-mcp-header":"S"},
		"n":{"type":"integer","x-mcp-header":"N"},
		"b":{"type":"boolean","x-mcp-header":"b-flag"},
		"o":{"type":"object","properties":{"deep":{"type":"string","x-mcp-header":"Deep"}}},
		"d1":{"type":"string","x-mcp-header":"Dup"},
		"d2":{"type":"string","x-mcp-header":"dup"},
		"bad":{"type":"string","x-mcp-header":"a b"},
		"plain":{"type":"string"}}}},
		{"name":"none","inputSchema":{"type":"object","properties":{"s":{"type":"string"}}}}]}`))
	call := func(name, args string) *Message {
		m, err := DecodeMessage([]byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"` + name + `","arguments":` + args + `}}`))
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	for _, c := range []struct {
		name, args string
		want       map[string]string
	}{
		{"t", `{"s":"us","n":5,"b":true,"o":{"deep":"x"},"d1":"a","d2":"b","bad":"c","plain":"p"}`,
			map[string]string{"Mcp-Param-S": "us", "Mcp-Param-N": "5", "Mcp-Param-B-Flag": "true", "Mcp-Param-Deep": "x"}},
		{"t", `{"s":"é","n":5.0}`, map[string]string{"Mcp-Param-S": "=?base64?w6k=?=", "Mcp-Param-N": "5"}},
		{"t", `{"s":" lead","n":1e2,"b":false}`, map[string]string{"Mcp-Param-S": "=?base64?IGxlYWQ=?=", "Mcp-Param-N": "100", "Mcp-Param-B-Flag": "false"}},
		{"t", `{"s":"=?base64?ZXU=?="}`, map[string]string{"Mcp-Param-S": "=?base64?PT9iYXNlNjQ/WlhVPT89?="}},
		{"t", `{"s":null,"n":1.5,"o":"flat"}`, nil},
		{"t", `{"s":["us"],"n":9007199254740993,"b":"true"}`, map[string]string{"Mcp-Param-B-Flag": "true"}},
		{"none", `{"s":"us"}`, nil},
		{"unknown", `{"s":"us"}`, nil},
	} {
		got := i.ParamHeaders("up", call(c.name, c.args))
		if !maps.Equal(got, c.want) {
			t.Errorf("%s %s: got %v, want %v", c.name, c.args, got, c.want)
		}
	}
	// An upstream's schema nested thousands deep is read to a bounded
	// depth on each call, not level by level to its end.
	deep := strings.Repeat(`{"type":"object","properties":{"a":`, 5000) + `{"type":"string","x-mcp-header":"Deep"}` + strings.Repeat(`}}`, 5000)
	i.ObserveTools("deep", []byte(`{"tools":[{"name":"t","inputSchema":`+deep+`}]}`))
	if got := i.ParamHeaders("deep", call("t", strings.Repeat(`{"a":`, 5000)+`"x"`+strings.Repeat(`}`, 5000))); got != nil {
		t.Errorf("a header 5000 levels deep: got %v", got)
	}
	if got := i.ParamHeaders("other", call("t", `{"s":"us"}`)); got != nil {
		t.Errorf("another upstream's tool: got %v", got)
	}
	for k, want := range map[string]bool{"Mcp-Param-Region": true, "mcp-param-x": true, "MCP-PARAM-": true, "Mcp-Params": false, "Mcp-Name": false} {
		if IsParamHeader(k) != want {
			t.Errorf("IsParamHeader(%q) = %v", k, !want)
		}
	}
}
