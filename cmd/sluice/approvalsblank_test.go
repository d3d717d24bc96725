package main

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
)

// TestApprovalsListQuotesBlankPaddedNames: the console shows an agent's
// name quoted when it has white space a reader would not see as it is
// (invisible.Name: "alice ", alice+U+2800), so that it cannot pass for
// alice; its Approvals page sends the operator to `sluice approvals list`
// for the calls it does not show. There a held call of "alice " printed
// as alice, the tab writer's padding after it, and alice+U+2800 (a blank
// Braille pattern, which Go calls printable) too.
func TestApprovalsListQuotesBlankPaddedNames(t *testing.T) {
	for _, name := range []string{"alice ", " alice", "ali  ce", "alice\u2800", "alice\u3000"} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(`[{"id":"apr_1","status":"pending","upstream":"bank","tool":"pay","agent":` + strconv.Quote(name) + `,"arguments":{},"expires":"2030-01-01T00:00:00Z"}]`))
		}))
		var out bytes.Buffer
		err := runApprovals(context.Background(), []string{"list", "--admin", srv.URL, "--token", "x"}, &out)
		srv.Close()
		if err != nil {
			t.Fatal(err)
		}
		row := strings.SplitN(out.String(), "\n", 3)[1]
		if !strings.Contains(row, `"`) {
			t.Errorf("agent %+q printed unquoted:\n%s", name, row)
		}
	}
}
