package classifier

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// TestInjectionOnRealToolText runs the detector over the descriptions and
// schemas of every real tool in the corpus (legitimate text written by
// server authors, full of imperatives, URLs, install commands and secrets
// talk) and fails when more than 1 % of the tools raise a finding.
func TestInjectionOnRealToolText(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join("testdata", "corpus", "servers", "*.json"))
	n, flagged := 0, 0
	var examples []string
	for _, path := range files {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		var srv struct {
			Spec struct {
				ID string `json:"id"`
			} `json:"spec"`
			Recorded struct {
				Tools []jsontext.Value `json:"tools"`
			} `json:"recorded"`
		}
		if err := json.Unmarshal(b, &srv); err != nil {
			t.Fatal(err)
		}
		for _, tool := range srv.Recorded.Tools {
			n++
			if fs := DetectInjection(tool); len(fs) > 0 {
				flagged++
				if len(examples) < 40 {
					examples = append(examples, srv.Spec.ID+": "+fs[0].Kind+" "+fs[0].Evidence)
				}
			}
		}
	}
	t.Logf("%d of %d real tools raise a finding:\n%s", flagged, n, strings.Join(examples, "\n"))
	if n == 0 || float64(flagged) > 0.01*float64(n) {
		t.Errorf("%d of %d real tools (%.2f %%) raise an injection finding; at most 1 %%", flagged, n, 100*float64(flagged)/float64(max(n, 1)))
	}
}
