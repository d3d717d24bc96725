package gateway

import (
	"net/http"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/sluicehq/sluice/intercept"
)

// copyHeaders copies every value of every header but the hop-by-hop ones
// and those skip names, each header's values its own: appending to one
// changes no other.
func TestCopyHeaders(t *testing.T) {
	src := http.Header{
		"Accept":               {"application/json", "text/event-stream"},
		"X-One":                {"1"},
		"X-Many":               {"a", "b", "c"},
		"X-None":               {},
		"Connection":           {"close"},
		"Authorization":        {"Bearer secret"},
		"Mcp-Param-Region":     {"eu"},
		"Mcp-Session-Id":       {"s"},
		"X-After-Many":         {"z"},
		"Content-Length":       {"12"},
		"Mcp-Protocol-Version": {"2025-06-18"},
	}
	dst := http.Header{}
	copyHeaders(dst, src, intercept.IsParamHeader)
	want := http.Header{
		"Accept": {"application/json", "text/event-stream"}, "X-One": {"1"}, "X-Many": {"a", "b", "c"}, "X-None": {},
		"X-After-Many": {"z"}, "Mcp-Protocol-Version": {"2025-06-18"},
	}
	if diff := cmp.Diff(want, dst); diff != "" {
		t.Errorf("copied headers (-want +got):\n%s", diff)
	}
	for k := range dst {
		dst[k] = append(dst[k], "appended")
	}
	for k, vv := range want {
		if got := dst[k]; !slices.Equal(got[:len(got)-1], vv) {
			t.Errorf("%s after appending to every header: got %q, want %q then \"appended\"", k, got, vv)
		}
	}
	all := http.Header{}
	copyHeaders(all, src, nil)
	if got := all["Mcp-Param-Region"]; !slices.Equal(got, []string{"eu"}) {
		t.Errorf("Mcp-Param-Region with no skip: got %q, want [eu]", got)
	}
}
