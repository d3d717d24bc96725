package classifier

import (
	"context"
	"errors"
	"maps"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

var llmProviders = []Provider{ProviderOpenAI, ProviderAnthropic, ProviderGemini}

// llmCheckFallback asserts the verdict of a call the model did not classify.
func llmCheckFallback(t *testing.T, v Verdict, axes ...string) {
	t.Helper()
	if v.CompositeConfidence != 0 || v.ConsistentWithDeclaration {
		t.Errorf("got composite %v consistent %v, want 0 and false", v.CompositeConfidence, v.ConsistentWithDeclaration)
	}
	if v.Axes.Len() != len(axes) {
		t.Errorf("got axes %v, want %v", v.Axes, axes)
	}
	for _, axis := range axes {
		want := AxisVerdict{Classified: ConservativeDefault(axis), Source: SourceLLMFallback, ConservativeDefaultApplied: true}
		if got := v.Axes.Get(axis); got != want {
			t.Errorf("axis %s: got %+v, want %+v", axis, got, want)
		}
	}
}

func TestLLMProviderWire(t *testing.T) {
	const timeout = 150 * time.Millisecond
	// The race detector on two cores is slow; the point is "about the
	// timeout", not "the full default of 2 s".
	const margin = 350 * time.Millisecond
	clock := time.Unix(1746000124, 0)

	cases := []struct {
		name    string
		mode    fakeLLMMode
		refused bool
		wantErr error // nil: a good verdict
	}{
		{name: "good", mode: llmGood},
		{name: "malformed JSON", mode: llmMalformed, wantErr: ErrInvalidReply},
		{name: "schema-invalid value", mode: llmInvalidValue, wantErr: ErrInvalidReply},
		{name: "slow", mode: llmSlow, wantErr: context.DeadlineExceeded},
		{name: "5xx", mode: llm5xx},
		{name: "not the wire format", mode: llmEnvelope, wantErr: errProviderReply},
		{name: "connection refused", refused: true},
	}
	for _, p := range llmProviders {
		for _, tc := range cases {
			t.Run(string(p)+"/"+tc.name, func(t *testing.T) {
				f := newFakeLLM(t, p)
				f.setMode(tc.mode)
				_, o := f.serve()
				if tc.refused {
					o.BaseURL = llmClosedURL(t)
				}
				o.Timeout = timeout
				o.Now = func() time.Time { return clock }
				l := mustLLM(t, o)

				d := llmDescriptor("sess-1")
				start := time.Now()
				v, err := l.Classify(context.Background(), d)
				elapsed := time.Since(start)

				if v.SessionID != "sess-1" || v.ToolName != d.ToolName || v.ClassifiedAt != clock.Unix() ||
					v.ClassifierID != "urn:sluice:classifier:llm-"+string(p)+":sess-1" {
					t.Errorf("got session %q tool %q at %d id %q, want the call's", v.SessionID, v.ToolName, v.ClassifiedAt, v.ClassifierID)
				}
				if err != nil && strings.Contains(err.Error(), testKeyFragment) {
					t.Errorf("error %q contains the API key", err)
				}
				if tc.mode == llmGood && !tc.refused {
					if err != nil {
						t.Fatalf("got error %v, want none", err)
					}
					want := map[string]AxisVerdict{
						AxisActionType: {Classified: Read, Confidence: 0.95, Source: SourceLLM},
						AxisBoundary:   {Classified: IntraOrg, Confidence: 0.9, Source: SourceLLM},
					}
					if diff := cmp.Diff(want, maps.Collect(v.Axes.All())); diff != "" {
						t.Errorf("axes (-want +got):\n%s", diff)
					}
					if want := (0.4*0.95 + 0.3*0.9) / 0.7; math.Abs(v.CompositeConfidence-want) > 1e-9 {
						t.Errorf("got composite %v, want %v", v.CompositeConfidence, want)
					}
					if !v.ConsistentWithDeclaration {
						t.Error("got consistent false, want true")
					}
					return
				}
				if err == nil {
					t.Fatal("got no error, want one for the log")
				}
				if tc.wantErr != nil && !errors.Is(err, tc.wantErr) {
					t.Errorf("got error %v, want %v", err, tc.wantErr)
				}
				llmCheckFallback(t, v, AxisActionType, AxisBoundary)
				if elapsed > timeout+margin {
					t.Errorf("took %v, want at most timeout %v + %v", elapsed, timeout, margin)
				}
				if tc.mode == llm5xx {
					var se *providerStatusError
					if !errors.As(err, &se) || se.Status != 503 || !strings.Contains(se.Snippet, "[REDACTED]") {
						t.Errorf("got %v, want a redacted HTTP 503", err)
					}
				}
			})
		}
	}
}

// testKeyFragment is enough of llmTestKey that finding it means a leak.
const testKeyFragment = "5f1c0ffee0ddba11"

func TestLLMProviderPrompt(t *testing.T) {
	for _, p := range llmProviders {
		t.Run(string(p), func(t *testing.T) {
			f := newFakeLLM(t, p)
			_, o := f.serve()
			o.Profile = ProfileExtended
			o.Inventory = func() InventorySnapshot {
				return InventorySnapshot{
					Hash: "inv-42",
					Tools: []InventoryTool{
						{Name: "read_invoice", Description: "Reads one invoice.", Classes: []string{"finance.invoicing.read"}},
						{Name: "pay_invoice", Description: strings.Repeat("é", 400), Classes: []string{"finance.payments"}},
					},
					CapabilityClasses: []string{"finance.invoicing.management"},
				}
			}
			l := mustLLM(t, o)
			d := llmDescriptor("sess-1")
			if _, err := l.Classify(context.Background(), d); err != nil {
				t.Fatal(err)
			}
			sys, user := *f.lastSys.Load(), *f.lastUser.Load()
			for _, want := range []string{
				"action_type — ", "boundary — ", "sensitivity — ", "scale — ", "reversibility — ",
				"Orchestrate", "Intra-org", "Regulated", "Unbounded", "Recoverable",
				"finance.invoicing.management\n", "finance.payments\n", "inv-42", `"name":"read_invoice"`,
				`"composite_confidence"`, "not instructions",
			} {
				if !strings.Contains(sys, want) {
					t.Errorf("system prompt lacks %q", want)
				}
			}
			if strings.Contains(sys, strings.Repeat("é", 301)) {
				t.Error("system prompt holds an untruncated description")
			}
			canon, _, _ := cacheCanonical(d, nil)
			if user != string(canon) {
				t.Errorf("got user message %s, want the canonical descriptor %s", user, canon)
			}
			for _, volatile := range []string{d.TxnID, "sess-1", "call_id"} {
				if strings.Contains(user, volatile) {
					t.Errorf("user message %s holds volatile %q", user, volatile)
				}
			}
		})
	}
}

func TestLLMProviderDefaultProfilePrompt(t *testing.T) {
	f := newFakeLLM(t, ProviderOpenAI)
	_, o := f.serve()
	l := mustLLM(t, o)
	if _, err := l.Classify(context.Background(), llmDescriptor("s")); err != nil {
		t.Fatal(err)
	}
	sys := *f.lastSys.Load()
	for _, absent := range []string{"sensitivity", "reversibility", "Tool inventory snapshot"} {
		if strings.Contains(sys, absent) {
			t.Errorf("Default-profile prompt without inventory mentions %q", absent)
		}
	}
}

func TestProviderBaseURL(t *testing.T) {
	cases := []struct {
		p       Provider
		in      string
		want    string
		wantErr bool
	}{
		{ProviderOpenAI, "", "https://api.openai.com", false},
		{ProviderAnthropic, "", "https://api.anthropic.com", false},
		{ProviderGemini, "", "https://generativelanguage.googleapis.com", false},
		{ProviderOpenAI, "http://127.0.0.1:11434/v1/", "http://127.0.0.1:11434", false},
		{ProviderOpenAI, "https://llm.corp.example/openai", "https://llm.corp.example/openai", false},
		{ProviderGemini, "https://gw.example/v1beta", "https://gw.example", false},
		{ProviderOpenAI, "ftp://x", "", true},
		{ProviderOpenAI, "127.0.0.1:8000", "", true},
		{ProviderOpenAI, "https://x/?key=1", "", true},
	}
	for _, tc := range cases {
		got, err := providerBaseURL(tc.p, tc.in)
		if (err != nil) != tc.wantErr || got != tc.want {
			t.Errorf("providerBaseURL(%s, %q) = %q, %v; want %q, error %v", tc.p, tc.in, got, err, tc.want, tc.wantErr)
		}
	}
}

func TestProviderReplyEdgeCases(t *testing.T) {
	cases := []struct {
		name string
		w    providerWire
		body string
		want error
	}{
		{"openai refusal", openAIWire{}, `{"choices":[{"message":{"content":null,"refusal":"no"}}]}`, ErrInvalidReply},
		{"openai no choices", openAIWire{}, `{"choices":[]}`, errProviderReply},
		{"anthropic no text block", anthropicWire{}, `{"type":"message","content":[],"stop_reason":"max_tokens"}`, ErrInvalidReply},
		{"anthropic error object", anthropicWire{}, `{"type":"error","error":{"type":"overloaded_error"}}`, errProviderReply},
		{"gemini blocked", geminiWire{}, `{"promptFeedback":{"blockReason":"SAFETY"}}`, ErrInvalidReply},
		{"gemini no parts", geminiWire{}, `{"candidates":[{"content":{},"finishReason":"MAX_TOKENS"}]}`, ErrInvalidReply},
		{"not JSON", geminiWire{}, `<html>`, errProviderReply},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := tc.w.text([]byte(tc.body)); !errors.Is(err, tc.want) {
				t.Errorf("got %v, want %v", err, tc.want)
			}
		})
	}
}

func TestProviderRedact(t *testing.T) {
	c := providerConn{key: llmTestKey}
	for _, body := range []string{
		"key " + llmTestKey + " rejected",
		"key " + llmTestKey[:20] + "… rejected", // a truncated echo
		strings.Repeat("x", 190) + llmTestKey,   // at the cut
	} {
		if got := c.snippet([]byte(body)); strings.Contains(got, testKeyFragment) || strings.Contains(got, llmTestKey[:14]) {
			t.Errorf("snippet(%q) = %q, holds the key", body, got)
		}
	}
}
