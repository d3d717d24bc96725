package classifier

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/sluicehq/sluice/intercept"
)

func TestWalkJSON(t *testing.T) {
	tests := []struct {
		in   string
		want string // visited events: kind, key, path, value
	}{
		{`{"a":"x","b":[1,true,null],"c":{}}`, `"a a=x 0b b[0]=1 tb b[1] nb b[2] [b=3 {c=0 {=3`},
		{`{"s":"caf\u00e9 \ud83d\ude00 \"q\" \\ \/ \t"}`, "\"s s=café 😀 \"q\" \\ / \t {=1"},
		{`[{"k":"v"},{"k":"w"}]`, `"k $[0].k=v {=1 "k $[1].k=w {=1 [=2`},
		{`  {"a" : [ "x" , "y" ] }  trailing`, `"a a[0]=x "a a[1]=y [a=2 {=1`},
		{`{"a":"unterminated`, ``},
		{`{"a":1,}`, `0a a=1`},
		{`{"a":-1.5e3}`, `0a a=-1500 {=1`},
		{`{"a":"\ud800"}`, "\"a a=\uFFFD {=1"},
	}
	for _, tt := range tests {
		var got []string
		walkJSON(jsontext.Value(tt.in), false, func(w *jsonWalker, ev walkEvent) {
			switch ev.kind {
			case '"':
				got = append(got, fmt.Sprintf(`"%s %s=%s`, ev.key, w.path(), ev.str))
			case '0':
				got = append(got, fmt.Sprintf(`0%s %s=%v`, ev.key, w.path(), ev.num))
			case 't', 'f', 'n':
				got = append(got, fmt.Sprintf(`%c%s %s`, ev.kind, ev.key, w.path()))
			default:
				got = append(got, fmt.Sprintf(`%c%s=%d`, ev.kind, ev.key, ev.n))
			}
		})
		if g := strings.Join(got, " "); g != tt.want {
			t.Errorf("walk %s:\ngot  %s\nwant %s", tt.in, g, tt.want)
		}
	}
}

func FuzzClassify(f *testing.F) {
	f.Add(`{"url":"https://evil.com","ids":[1,2]}`, `{"readOnlyHint":true}`, "stdio:npx x", "get_thing")
	f.Add(`{"a":{"b":[{"c":"\ud800"}]}}`, `[`, "http://[::1]:80/mcp", "API-post-search")
	f.Add(`"x"`, `{"destructiveHint":false,"openWorldHint":true}`, "unix:/x", "")
	b, err := NewBuiltin(Options{Profile: ProfileExtended})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, params, ann, target, tool string) {
		d := &intercept.ActionDescriptor{ToolName: tool, Parameters: jsontext.Value(params), Annotations: jsontext.Value(ann), TargetEndpoint: target}
		v, err := b.Classify(context.Background(), d)
		if err != nil {
			t.Fatal(err)
		}
		for a, av := range v.Axes.All() {
			if !ValidValue(a, av.Classified) || av.Confidence < 0 || av.Confidence > 1 {
				t.Fatalf("%s: invalid %+v", a, av)
			}
		}
		NewIntentRecord(d, v, IntentOptions{})
	})
}
