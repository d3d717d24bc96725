package deadpeer_test

import (
	"net/http"
	"testing"

	"github.com/sluicehq/sluice/internal/deadpeer"
)

func TestAddrFailsRequests(t *testing.T) {
	addr := deadpeer.Addr(t)
	for i := range 3 {
		resp, err := http.Post("http://"+addr+"/", "application/json", nil)
		if err == nil {
			resp.Body.Close()
			t.Fatalf("request %d: got %s, want an error from a dead peer", i, resp.Status)
		}
	}
}
