package classifier

import (
	stdjson "encoding/json"
	"testing"

	"github.com/go-json-experiment/json"
)

// mapVerdict is Verdict as it was with a map of axes: its JSON is what
// Verdict's must stay.
type mapVerdict struct {
	SessionID                 string                 `json:"session_id"`
	ToolName                  string                 `json:"tool_name"`
	Axes                      map[string]AxisVerdict `json:"axes"`
	CapabilityClassVerdict    string                 `json:"capability_class_verdict"`
	CapabilityClassConfidence float64                `json:"capability_class_confidence"`
	CompositeConfidence       float64                `json:"composite_confidence"`
	ConsistentWithDeclaration bool                   `json:"consistent_with_declaration"`
	ClassifierID              string                 `json:"classifier_id"`
	ClassifiedAt              int64                  `json:"classified_at"`
}

func asMapVerdict(v Verdict) mapVerdict {
	m := mapVerdict{v.SessionID, v.ToolName, nil, v.CapabilityClassVerdict, v.CapabilityClassConfidence,
		v.CompositeConfidence, v.ConsistentWithDeclaration, v.ClassifierID, v.ClassifiedAt}
	if v.Axes.Len() > 0 {
		m.Axes = map[string]AxisVerdict{}
		for a, av := range v.Axes.All() {
			m.Axes[a] = av
		}
	}
	return m
}

func TestVerdictJSON(t *testing.T) {
	b, err := NewBuiltin(Options{Profile: ProfileExtended})
	if err != nil {
		t.Fatal(err)
	}
	b2, err := NewBuiltin(Options{})
	if err != nil {
		t.Fatal(err)
	}
	full := classifyOne(t, b, builtinCall{target: "stdio:npx -y acme-widgets-mcp@1.0.0", tool: "delete_file", args: `{"path":"/tmp/<x>&"}`})
	full.SessionID = "s-1"
	full.Axes.Set(AxisScale, AxisVerdict{Classified: Bounded, Confidence: 1e-7, Source: "a<b>&c"})
	two := classifyOne(t, b2, builtinCall{target: "http://intranet.example", tool: "read_file"})
	for name, v := range map[string]Verdict{"extended": full, "default": two, "zero": {}} {
		t.Run(name, func(t *testing.T) {
			old := asMapVerdict(v)
			for _, enc := range []struct {
				name string
				f    func(any) ([]byte, error)
			}{
				{"encoding/json", stdjson.Marshal},
				{"go-json-experiment", func(x any) ([]byte, error) { return json.Marshal(x, json.Deterministic(true)) }},
				{"go-json-experiment nil as null", func(x any) ([]byte, error) {
					return json.Marshal(x, json.Deterministic(true), json.FormatNilMapAsNull(true))
				}},
			} {
				got, err := enc.f(v)
				if err != nil {
					t.Fatal(err)
				}
				want, err := enc.f(old)
				if err != nil {
					t.Fatal(err)
				}
				if string(got) != string(want) {
					t.Errorf("%s:\ngot  %s\nwant %s", enc.name, got, want)
				}
				var back Verdict
				if err := json.Unmarshal(got, &back); err != nil {
					t.Fatalf("%s: %v", enc.name, err)
				}
				if back.Axes != v.Axes {
					t.Errorf("%s: read back %+v, want %+v", enc.name, back.Axes, v.Axes)
				}
				var stdBack Verdict
				if err := stdjson.Unmarshal(got, &stdBack); err != nil || stdBack.Axes != v.Axes {
					t.Errorf("%s: encoding/json read back %+v (%v), want %+v", enc.name, stdBack.Axes, err, v.Axes)
				}
			}
		})
	}
	var a Axes
	if err := json.Unmarshal([]byte(`{"colour":{"classified":"Read"}}`), &a); err == nil {
		t.Errorf("an unknown axis: got no error, want one")
	}
}

func TestAxes(t *testing.T) {
	var a Axes
	if _, ok := a.Lookup(AxisBoundary); ok || a.Len() != 0 {
		t.Fatalf("zero Axes: got %+v, want none", a)
	}
	a.Set(AxisSensitivity, AxisVerdict{Classified: Public})
	a.Set(AxisActionType, AxisVerdict{Classified: Read})
	a.Set(AxisActionType, AxisVerdict{Classified: Write})
	var names []string
	for n := range a.All() {
		names = append(names, n)
	}
	if got, want := len(names), 2; got != want || names[0] != AxisActionType || names[1] != AxisSensitivity {
		t.Errorf("got axes %v, want [action_type sensitivity]", names)
	}
	if got := a.Get(AxisActionType).Classified; got != Write {
		t.Errorf("got action_type %s, want Write", got)
	}
	if got := a.Get("colour"); got != (AxisVerdict{}) {
		t.Errorf("unknown axis: got %+v, want zero", got)
	}
	defer func() {
		if recover() == nil {
			t.Errorf("Set of an unknown axis: got no panic, want one")
		}
	}()
	a.Set("colour", AxisVerdict{})
}
