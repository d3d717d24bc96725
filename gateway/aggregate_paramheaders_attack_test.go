package gateway

import (
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
)

// TestAttackVirtualParamHeaderDisagreesWithBody (found by review91): a
// 2026-07-28 client calls, through a virtual server, a tool whose HTTP
// upstream marks its region argument with x-mcp-header (SEP-2243), with
// an Mcp-Param-Region header that says another region than the body, or
// says it twice. What sits in front of the gateway (a rate limiter, a
// router by tenant or region) acts on the header; policy and the
// upstream on the body. The route refuses such a call -32020
// (TestAttackParamHeaderDisagreesWithBody); the virtual server wrote the
// inner request's headers afresh from the body and sent it on, so the
// header the client lied in was never checked.
func TestAttackVirtualParamHeaderDisagreesWithBody(t *testing.T) {
	var executed sync.Map
	gw := regionVirtualServer(t, &executed)
	call := func(id int, region []string) (int, string) {
		t.Helper()
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, gw.URL+"/mcp", strings.NewReader(modernCall(id, "transfer", `{"region":"us","amount":5}`)))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		for k, v := range modernHeaders("tools/call", "transfer") {
			req.Header.Set(k, v)
		}
		for _, v := range region {
			req.Header.Add("Mcp-Param-Region", v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if status, body := call(2, []string{"us"}); status != 200 || !strings.Contains(body, "executed in us") {
		t.Fatalf("a US transfer mirroring its region: %d %s, want it executed", status, body)
	}
	for i, region := range [][]string{{"eu"}, {"us", "eu"}, {"=?base64?ZXU=?="}, nil} {
		status, body := call(10+i, region)
		if status != http.StatusBadRequest || !strings.Contains(body, "-32020") {
			t.Errorf("Mcp-Param-Region %q on a call whose region is \"us\": %d %.200s, want 400 -32020 as the route answers", region, status, body)
		}
	}
	if v, _ := executed.Load("us"); v == nil || *v.(*int) != 1 {
		t.Error("the upstream executed another count of transfers than the one whose header agreed with its body")
	}
}
