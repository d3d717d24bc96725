package classifier

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/intercept"
)

func llmTestSchema(t testing.TB, extended bool) llmSchema {
	t.Helper()
	o := LLMOptions{}
	if extended {
		o.Profile = ProfileExtended
	}
	s, err := newLLMSchema(o)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestLLMReplyValidation(t *testing.T) {
	good := llmGoodReply("read_invoice", false)
	axisRead := `"action_type":{"classified":"Read","confidence":0.95}`
	axisBoundary := `"boundary":{"classified":"Intra-org","confidence":0.9}`
	tail := `"capability_class_verdict":"","capability_class_confidence":0.5,"composite_confidence":0.9,"consistent_with_declaration":true}`
	reply := func(axes string) string { return `{"axes":{` + axes + `},` + tail }

	cases := []struct {
		name    string
		text    string
		decl    func(d *intercept.ActionDescriptor)
		vocab   []string
		wantErr bool
		check   func(t *testing.T, v Verdict)
	}{
		{name: "good", text: good},
		{name: "minimal members", text: reply(axisRead + "," + axisBoundary)},
		{name: "Markdown fence", text: "```json\n" + good + "\n```"},
		{name: "bare fence", text: "```" + good + "```"},
		{name: "gateway-owned members ignored", text: strings.Replace(good, "{", `{"session_id":"evil","classifier_id":"urn:x","classified_at":1,`, 1),
			check: func(t *testing.T, v Verdict) {
				if v.SessionID != "" || v.ClassifierID != "" || v.ClassifiedAt != 0 {
					t.Errorf("got %q %q %d from the model, want them left to the caller", v.SessionID, v.ClassifierID, v.ClassifiedAt)
				}
			}},
		{name: "inactive known axis dropped", text: reply(axisRead + "," + axisBoundary + `,"scale":{"classified":"Unbounded","confidence":1}`),
			check: func(t *testing.T, v Verdict) {
				if _, ok := v.Axes.Lookup(AxisScale); ok || v.Axes.Len() != 2 {
					t.Errorf("got axes %v, want action_type and boundary only", v.Axes)
				}
			}},
		{name: "low confidence takes the conservative default", text: reply(`"action_type":{"classified":"Read","confidence":0.4},` + axisBoundary),
			check: func(t *testing.T, v Verdict) {
				want := AxisVerdict{Classified: Write, Confidence: 0.4, Source: SourceLLM, ConservativeDefaultApplied: true}
				if got := v.Axes.Get(AxisActionType); got != want {
					t.Errorf("got %+v, want %+v", got, want)
				}
				if want := (0.4*0.4 + 0.3*0.9) / 0.7; math.Abs(v.CompositeConfidence-want) > 1e-9 {
					t.Errorf("got composite %v, want %v", v.CompositeConfidence, want)
				}
			}},
		{name: "model's conservative flag kept on the default value", text: reply(`"action_type":{"classified":"Write","confidence":0.8,"conservative_default_applied":true},` + axisBoundary),
			check: func(t *testing.T, v Verdict) {
				if !v.Axes.Get(AxisActionType).ConservativeDefaultApplied {
					t.Error("got conservative_default_applied false, want true")
				}
			}},
		{name: "model's composite replaced by the weighted mean", text: strings.Replace(good, `"composite_confidence":0.9`, `"composite_confidence":1`, 1),
			check: func(t *testing.T, v Verdict) {
				if v.CompositeConfidence == 1 {
					t.Error("got the model's composite, want the weighted mean")
				}
			}},
		{name: "declared action type disagrees", text: good,
			decl: func(d *intercept.ActionDescriptor) { d.ActionTypeDeclared = Write },
			check: func(t *testing.T, v Verdict) {
				if v.ConsistentWithDeclaration {
					t.Error("got consistent true against a Write declaration, want false")
				}
			}},
		{name: "declared class matches", text: strings.Replace(good, `"capability_class_verdict":""`, `"capability_class_verdict":"finance.read"`, 1),
			decl: func(d *intercept.ActionDescriptor) { d.CapabilityClassDeclared = "finance.read" },
			check: func(t *testing.T, v Verdict) {
				if !v.ConsistentWithDeclaration || v.CapabilityClassVerdict != "finance.read" {
					t.Errorf("got %q consistent %v, want finance.read true", v.CapabilityClassVerdict, v.ConsistentWithDeclaration)
				}
			}},
		{name: "class from the vocabulary", vocab: []string{"finance.read"},
			text: strings.Replace(good, `"capability_class_verdict":""`, `"capability_class_verdict":"finance.read"`, 1)},
		{name: "model says inconsistent", text: strings.Replace(good, `"consistent_with_declaration":true`, `"consistent_with_declaration":false`, 1),
			check: func(t *testing.T, v Verdict) {
				if v.ConsistentWithDeclaration {
					t.Error("got consistent true, want the model's false")
				}
			}},

		{name: "empty", text: "", wantErr: true},
		{name: "prose", text: "The call is a Read.", wantErr: true},
		{name: "array", text: "[" + good + "]", wantErr: true},
		{name: "trailing text", text: good + " hope this helps", wantErr: true},
		{name: "two objects", text: good + good, wantErr: true},
		{name: "unknown member", text: strings.Replace(good, "{", `{"reasoning":"x",`, 1), wantErr: true},
		{name: "unknown axis member", text: reply(`"action_type":{"classified":"Read","confidence":0.95,"why":"x"},` + axisBoundary), wantErr: true},
		{name: "unknown axis", text: reply(axisRead + "," + axisBoundary + `,"risk":{"classified":"Read","confidence":1}`), wantErr: true},
		{name: "missing active axis", text: reply(axisRead), wantErr: true},
		{name: "null axis", text: reply(axisRead + `,"boundary":null`), wantErr: true},
		{name: "value not in §5.1", text: reply(`"action_type":{"classified":"Delete","confidence":0.9},` + axisBoundary), wantErr: true},
		{name: "value of another axis", text: reply(`"action_type":{"classified":"External","confidence":0.9},` + axisBoundary), wantErr: true},
		{name: "value in lower case", text: reply(`"action_type":{"classified":"read","confidence":0.9},` + axisBoundary), wantErr: true},
		{name: "confidence above 1", text: reply(`"action_type":{"classified":"Read","confidence":1.2},` + axisBoundary), wantErr: true},
		{name: "negative confidence", text: reply(`"action_type":{"classified":"Read","confidence":-0.1},` + axisBoundary), wantErr: true},
		{name: "confidence as a string", text: reply(`"action_type":{"classified":"Read","confidence":"0.9"},` + axisBoundary), wantErr: true},
		{name: "confidence missing", text: reply(`"action_type":{"classified":"Read"},` + axisBoundary), wantErr: true},
		{name: "composite above 1", text: strings.Replace(good, `"composite_confidence":0.9`, `"composite_confidence":9`, 1), wantErr: true},
		{name: "class confidence missing", text: strings.Replace(good, `"capability_class_confidence":0.6,`, ``, 1), wantErr: true},
		{name: "consistency missing", text: strings.Replace(good, `,"consistent_with_declaration":true`, ``, 1), wantErr: true},
		{name: "consistency null", text: strings.Replace(good, `"consistent_with_declaration":true`, `"consistent_with_declaration":null`, 1), wantErr: true},
		{name: "axes missing", text: `{` + tail, wantErr: true},
		{name: "other tool's name", text: strings.Replace(good, `"read_invoice"`, `"delete_all"`, 1), wantErr: true},
		{name: "class outside the vocabulary", vocab: []string{"finance.read"},
			text: strings.Replace(good, `"capability_class_verdict":""`, `"capability_class_verdict":"admin.everything"`, 1), wantErr: true},
		{name: "class without a vocabulary", text: strings.Replace(good, `"capability_class_verdict":""`, `"capability_class_verdict":"made.up"`, 1), wantErr: true},
		{name: "duplicate member", text: strings.Replace(good, "{", `{"composite_confidence":0.1,`, 1), wantErr: true},
		{name: "classified_at as a float", text: strings.Replace(good, "{", `{"classified_at":1.5,`, 1), wantErr: true},
	}
	s := llmTestSchema(t, false)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d := llmDescriptor("")
			if tc.decl != nil {
				tc.decl(d)
			}
			v, err := s.verdict(tc.text, d, tc.vocab)
			if tc.wantErr {
				if !errors.Is(err, ErrInvalidReply) {
					t.Fatalf("got %v, want ErrInvalidReply", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("got %v, want a verdict", err)
			}
			if v.Axes.Len() != 2 || v.CompositeConfidence <= 0 || v.CompositeConfidence > 1 {
				t.Errorf("got %+v, want two axes and a composite in (0, 1]", v)
			}
			if tc.check != nil {
				tc.check(t, v)
			}
		})
	}
}

func TestLLMReplyExtended(t *testing.T) {
	s := llmTestSchema(t, true)
	v, err := s.verdict(llmGoodReply("read_invoice", true), llmDescriptor(""), nil)
	if err != nil {
		t.Fatal(err)
	}
	want := 0.40*0.95 + 0.30*0.9 + 0.15*0.8 + 0.10*0.85 + 0.05*0.75
	if math.Abs(v.CompositeConfidence-want) > 1e-9 || v.Axes.Len() != 5 {
		t.Errorf("got composite %v over %d axes, want %v over 5", v.CompositeConfidence, v.Axes.Len(), want)
	}
	// A Default-profile reply lacks the extended axes.
	if _, err := s.verdict(llmGoodReply("read_invoice", false), llmDescriptor(""), nil); !errors.Is(err, ErrInvalidReply) {
		t.Errorf("got %v for a reply without extended axes, want ErrInvalidReply", err)
	}
}

func TestLLMSchemaOptions(t *testing.T) {
	reply := llmGoodReply("read_invoice", false) // action_type 0.95, boundary 0.9
	cases := []struct {
		name    string
		o       LLMOptions
		want    float64
		wantErr bool
	}{
		{name: "default weights redistributed", o: LLMOptions{}, want: (0.4*0.95 + 0.3*0.9) / 0.7},
		{name: "custom weights", o: LLMOptions{Weights: PerAxis{ActionType: 0.25, Boundary: 0.75}}, want: 0.25*0.95 + 0.75*0.9},
		{name: "floor above the model's confidence", o: LLMOptions{Floors: PerAxis{Boundary: 0.95}}, want: (0.4*0.95 + 0.3*0.9) / 0.7},
		{name: "negative weight", o: LLMOptions{Weights: PerAxis{ActionType: -1, Boundary: 1}}, wantErr: true},
		{name: "NaN weight", o: LLMOptions{Weights: PerAxis{ActionType: math.NaN(), Boundary: 1}}, wantErr: true},
		{name: "active weights 0", o: LLMOptions{Weights: PerAxis{Scale: 1}}, wantErr: true},
		{name: "floor above 1", o: LLMOptions{Floors: PerAxis{ActionType: 1.5}}, wantErr: true},
		{name: "unknown profile", o: LLMOptions{Profile: "everything"}, wantErr: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s, err := newLLMSchema(tc.o)
			if (err != nil) != tc.wantErr {
				t.Fatalf("got error %v, want error %v", err, tc.wantErr)
			}
			if err != nil {
				return
			}
			v, err := s.verdict(reply, llmDescriptor(""), nil)
			if err != nil {
				t.Fatal(err)
			}
			if math.Abs(v.CompositeConfidence-tc.want) > 1e-9 {
				t.Errorf("got composite %v, want %v", v.CompositeConfidence, tc.want)
			}
			if tc.o.Floors.Boundary != 0 && v.Axes.Get(AxisBoundary).Classified != External {
				t.Errorf("got boundary %+v, want the conservative External below the floor", v.Axes.Get(AxisBoundary))
			}
		})
	}
}

// FuzzLLMReply: whatever a model says, the result is either a verdict
// inside the schema or ErrInvalidReply — never a panic, never a value
// outside §5.1.
func FuzzLLMReply(f *testing.F) {
	f.Add(llmGoodReply("read_invoice", true))
	f.Add(llmGoodReply("read_invoice", false))
	f.Add("```json\n" + llmGoodReply("read_invoice", true) + "\n```")
	f.Add(`{"axes":{"action_type":{"classified":"Read","confidence":1e400}}}`)
	f.Add(`{"axes":{"scale":null},"capability_class_verdict":"\ud800"}`)
	s := llmTestSchema(f, true)
	d := llmDescriptor("")
	f.Fuzz(func(t *testing.T, text string) {
		v, err := s.verdict(text, d, []string{"finance.read"})
		if err != nil {
			if !errors.Is(err, ErrInvalidReply) {
				t.Fatalf("got %v, want ErrInvalidReply", err)
			}
			return
		}
		if v.Axes.Len() != 5 {
			t.Fatalf("got %d axes, want 5", v.Axes.Len())
		}
		for axis, a := range v.Axes.All() {
			if !ValidValue(axis, a.Classified) || a.Confidence < 0 || a.Confidence > 1 {
				t.Fatalf("axis %s: got %+v, outside the schema", axis, a)
			}
		}
		if v.CompositeConfidence < 0 || v.CompositeConfidence > 1 || v.CapabilityClassConfidence < 0 || v.CapabilityClassConfidence > 1 {
			t.Fatalf("got composite %v class %v, want both in [0, 1]", v.CompositeConfidence, v.CapabilityClassConfidence)
		}
	})
}
