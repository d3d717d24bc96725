package a2a

import (
	"context"
	"fmt"
	"github.com/sluicehq/sluice/internal/costratio"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-json-experiment/json/jsontext"
)

// TestAttackDeepPushConfig: push notification URLs are looked for
// anywhere in a message's configuration (or a push config's params), and
// the search decoded each level of nesting again, all below it: a
// configuration nested 2,000 deep over 256 KiB took 2,590 times one as
// long and flat. It must be read once, and still find every url.
func TestAttackDeepPushConfig(t *testing.T) {
	const n, depth = 256 << 10, 2000
	pad := `"note":"` + strings.Repeat("x", n) + `"`
	deep := jsontext.Value(strings.Repeat(`{"a":[`, depth) + `{` + pad + `}` + strings.Repeat(`]}`, depth))
	flat := jsontext.Value(`{"a":[{` + pad + `,"b":"` + strings.Repeat("y", len(deep)-len(pad)-20) + `"}]}`)
	g := &Gateway{}
	search := func(v jsontext.Value) func() {
		return func() {
			if err := g.checkPushURLs(context.Background(), v, false); err != nil {
				t.Fatal(err)
			}
		}
	}
	ratio, d, f := costratio.Of(search(deep), search(flat))
	t.Logf("%d deep: %v; flat: %v; ratio %.1f", depth, d, f, ratio)
	if ratio > 20 {
		t.Errorf("a configuration %d deep took %v to search for push URLs, %.0f times the %v of a flat one as long (want it read once)", depth, d, ratio, f)
	}

	for _, v := range []string{
		strings.Repeat(`{"x":[`, 50) + `{"url":"http://127.0.0.1/"}` + strings.Repeat(`]}`, 50),
		`{"pushNotificationConfig":{"URL":["http://ok.example/","http://10.0.0.1/"]}}`,
		`{"a":{"url":"http://[::1]/"},"b":1}`,
	} {
		if err := g.checkPushURLs(context.Background(), jsontext.Value(v), false); err == nil {
			t.Errorf("%.60s…: accepted, want its private push url refused", v)
		}
	}
	var keys []string
	walkStrings(jsontext.Value(`{"a":"1","b":["2",{"c":"3"}],"d":[["4"]],"e":{"f":{"g":"5"}},"h":"6"}`), "top", func(k, s string) { keys = append(keys, k+"="+s) })
	slices.Sort(keys)
	if got, want := strings.Join(keys, " "), "a=1 b=2 c=3 d=4 g=5 h=6"; got != want {
		t.Errorf("walkStrings: got %s, want %s", got, want)
	}
}

// TestAttackPushURLLookupFlood: each push notification URL's host is
// looked up to see where it leads, while the request waits. A push
// config naming 200 hosts of a domain whose server answers slowly was
// 200 lookups one after another; as for file URIs, one request gets at
// most maxFileHosts lookups, within one deadline.
func TestAttackPushURLLookupFlood(t *testing.T) {
	asked := slowDNS(t, 20*time.Millisecond)
	var urls []string
	for i := range 200 {
		urls = append(urls, fmt.Sprintf(`{"url":"https://h%d.slow.example/hook"}`, i))
	}
	g := &Gateway{}
	err := g.checkPushURLs(context.Background(), jsontext.Value(`{"configs":[`+strings.Join(urls, ",")+`]}`), false)
	if err == nil {
		t.Errorf("200 push hosts accepted, want refused past %d", maxFileHosts)
	}
	if n := asked.Load(); n > 2*maxFileHosts {
		t.Errorf("200 push hosts: %d DNS questions, want at most %d (A and AAAA for %d hosts)", n, 2*maxFileHosts, maxFileHosts)
	}
}
