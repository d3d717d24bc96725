package classifier

import (
	"context"
	"maps"
	"reflect"
	"testing"
	"time"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/google/go-cmp/cmp"

	"github.com/sluicehq/sluice/intercept"
)

func TestCacheKey(t *testing.T) {
	base := llmDescriptor("a")
	_, want, err := cacheCanonical(base, nil)
	if err != nil {
		t.Fatal(err)
	}
	same := []func(d *intercept.ActionDescriptor){
		func(d *intercept.ActionDescriptor) {
			d.TxnID, d.SessionID, d.CallID = "other", "b", jsontext.Value(`"x-9"`)
		},
		func(d *intercept.ActionDescriptor) {
			d.Parameters = jsontext.Value("{\n  \"fields\" : [\"amount\",\"vendor\"],\n  \"invoice_id\":\"INV-2024-0042\"}")
		},
		func(d *intercept.ActionDescriptor) { d.CallID = nil },
	}
	for i, change := range same {
		d := *base
		change(&d)
		if _, got, _ := cacheCanonical(&d, nil); got != want {
			t.Errorf("change %d: got a different key, want the same", i)
		}
	}
	different := []func(d *intercept.ActionDescriptor){
		func(d *intercept.ActionDescriptor) { d.ToolName = "delete_invoice" },
		func(d *intercept.ActionDescriptor) { d.Parameters = jsontext.Value(`{"invoice_id":"INV-2024-0043"}`) },
		func(d *intercept.ActionDescriptor) { d.TargetEndpoint = "https://evil.example/api" },
		func(d *intercept.ActionDescriptor) { d.ToolInventoryHash = "v2" },
		func(d *intercept.ActionDescriptor) { d.ActionTypeDeclared = Write },
		func(d *intercept.ActionDescriptor) { d.Annotations = jsontext.Value(`{"readOnlyHint":true}`) },
	}
	for i, change := range different {
		d := *base
		change(&d)
		if _, got, _ := cacheCanonical(&d, nil); got == want {
			t.Errorf("change %d: got the same key, want a different one", i)
		}
	}
	canon, _, _ := cacheCanonical(base, nil)
	const wantCanon = `{"agent":"taxbot","parameters":{"fields":["amount","vendor"],"invoice_id":"INV-2024-0042"},` +
		`"target_endpoint":"https://finance.acme.internal/api/invoices","tool_description":"Reads one invoice from the finance system.",` +
		`"tool_name":"read_invoice","txn_id":"","upstream":"finance"}`
	if string(canon) != wantCanon {
		t.Errorf("got canonical\n%s\nwant\n%s", canon, wantCanon)
	}
	if _, _, err := cacheCanonical(&intercept.ActionDescriptor{ToolName: "bare"}, nil); err != nil {
		t.Errorf("descriptor without parameters: got %v, want a key", err)
	}
	bad := *base
	bad.Parameters = jsontext.Value(`{"unterminated":`)
	if _, _, err := cacheCanonical(&bad, nil); err == nil {
		t.Error("got no error for invalid parameters")
	}
}

func TestLLMCacheHit(t *testing.T) {
	f := newFakeLLM(t, ProviderOpenAI)
	_, o := f.serve()
	now := time.Unix(1000, 0)
	o.Now = func() time.Time { return now }
	l := mustLLM(t, o)
	ctx := context.Background()

	first, err := l.Classify(ctx, llmDescriptor("s1"))
	if err != nil {
		t.Fatal(err)
	}
	first.Axes.Set(AxisActionType, AxisVerdict{Classified: Provision}) // the caller's copy

	now = time.Unix(2000, 0)
	second, err := l.Classify(ctx, llmDescriptor("s2"))
	if err != nil {
		t.Fatal(err)
	}
	if n := f.calls.Load(); n != 1 {
		t.Errorf("got %d provider calls, want 1", n)
	}
	if second.SessionID != "s2" || second.ClassifiedAt != 2000 || second.ClassifierID != "urn:sluice:classifier:llm-openai:s2" {
		t.Errorf("cache hit: got session %q at %d id %q, want s2 at 2000 with s2's id", second.SessionID, second.ClassifiedAt, second.ClassifierID)
	}
	if got := second.Axes.Get(AxisActionType).Classified; got != Read {
		t.Errorf("got %q, want Read: a caller's change reached the cache", got)
	}
	if l.cache.len() != 1 {
		t.Errorf("got %d cached, want 1", l.cache.len())
	}
}

func TestLLMCacheSkipsFallbacks(t *testing.T) {
	f := newFakeLLM(t, ProviderOpenAI)
	f.setMode(llmInvalidValue)
	_, o := f.serve()
	l := mustLLM(t, o)
	ctx := context.Background()
	if _, err := l.Classify(ctx, llmDescriptor("s")); err == nil {
		t.Fatal("got no error for an invalid reply")
	}
	f.setMode(llmGood)
	v, err := l.Classify(ctx, llmDescriptor("s"))
	if err != nil || v.CompositeConfidence == 0 {
		t.Fatalf("got %v, %v; want a good verdict from a second request", v, err)
	}
	if n := f.calls.Load(); n != 2 {
		t.Errorf("got %d provider calls, want 2", n)
	}
}

func TestLLMCacheDisabled(t *testing.T) {
	f := newFakeLLM(t, ProviderOpenAI)
	_, o := f.serve()
	o.CacheSize = -1
	l := mustLLM(t, o)
	for range 2 {
		if _, err := l.Classify(context.Background(), llmDescriptor("s")); err != nil {
			t.Fatal(err)
		}
	}
	if n := f.calls.Load(); n != 2 {
		t.Errorf("got %d provider calls, want 2", n)
	}
}

func TestVerdictCacheEvicts(t *testing.T) {
	c, err := newVerdictCache(2)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		c.add(cacheKey{byte(i)}, []byte{'r', byte(i)}, Verdict{ToolName: string(rune('a' + i))})
	}
	if _, ok := c.get(cacheKey{0}, nil); ok {
		t.Error("got the oldest entry, want it evicted")
	}
	if _, ok := c.getRaw([]byte{'r', 0}); ok {
		t.Error("got the oldest raw entry, want it evicted")
	}
	if v, ok := c.getRaw([]byte{'r', 2}); !ok || v.ToolName != "c" {
		t.Errorf("got %+v %v from the memo, want c", v, ok)
	}
	if _, ok := c.getRaw(make([]byte, cacheRawMax+1)); ok {
		t.Error("got a hit for a raw form over the limit")
	}
	if v, ok := c.get(cacheKey{2}, nil); !ok || v.ToolName != "c" {
		t.Errorf("got %+v %v, want c", v, ok)
	}
	if diff := cmp.Diff(2, c.len()); diff != "" {
		t.Error(diff)
	}
}

// TestCacheKeysCoverDescriptor changes each descriptor field in turn: both
// keys must change with every field but the volatile ones, or a new field
// has been added to intercept.ActionDescriptor and not to cacheRawKey.
func TestCacheKeysCoverDescriptor(t *testing.T) {
	base := llmDescriptor("s")
	_, canon0, _ := cacheCanonical(base, nil)
	raw0 := string(cacheRaw(nil, base))
	volatile := map[string]bool{"TxnID": true, "SessionID": true, "CallID": true}
	typ := reflect.TypeFor[intercept.ActionDescriptor]()
	for i := range typ.NumField() {
		field := typ.Field(i)
		if field.Tag.Get("json") == "-" {
			continue // not part of what the classifier sees (e.g. its own advice)
		}
		d := *base
		fv := reflect.ValueOf(&d).Elem().Field(i)
		switch fv.Interface().(type) {
		case string:
			fv.SetString(fv.String() + "-changed")
		case jsontext.Value:
			fv.Set(reflect.ValueOf(jsontext.Value(`{"changed":true}`)))
		case *intercept.Principal:
			fv.Set(reflect.ValueOf(&intercept.Principal{ID: "changed", Method: "api_key"}))
		default:
			t.Fatalf("field %s has type %v: teach cacheRawKey and this test about it", field.Name, field.Type)
		}
		_, canon, err := cacheCanonical(&d, nil)
		if err != nil {
			t.Fatal(err)
		}
		raw := string(cacheRaw(nil, &d))
		if volatile[field.Name] {
			if canon != canon0 || raw != raw0 {
				t.Errorf("volatile field %s changed a key", field.Name)
			}
			continue
		}
		if canon == canon0 || raw == raw0 {
			t.Errorf("field %s: canonical key changed %v, raw key changed %v; want both changed", field.Name, canon != canon0, raw != raw0)
		}
	}
}

// TestLLMCacheCanonicalHit: a call whose arguments differ only in member
// order or white space misses the raw memo and hits the canonical cache.
func TestLLMCacheCanonicalHit(t *testing.T) {
	f := newFakeLLM(t, ProviderGemini)
	_, o := f.serve()
	l := mustLLM(t, o)
	if _, err := l.Classify(context.Background(), llmDescriptor("s1")); err != nil {
		t.Fatal(err)
	}
	d := llmDescriptor("s2")
	d.Parameters = jsontext.Value(`{ "fields": ["amount", "vendor"], "invoice_id": "INV-2024-0042" }`)
	v, err := l.Classify(context.Background(), d)
	if err != nil || v.SessionID != "s2" {
		t.Fatalf("got %+v, %v; want a cached verdict for s2", v, err)
	}
	if n := f.calls.Load(); n != 1 {
		t.Errorf("got %d provider calls, want 1", n)
	}
	if _, ok := l.cache.getRaw(cacheRawInventory(cacheRaw(nil, d), "")); !ok {
		t.Error("canonical hit not remembered under the raw key")
	}
}

func BenchmarkCacheRaw(b *testing.B) {
	d := llmDescriptor("s")
	b.ReportAllocs()
	cpu := llmCPUTime()
	for b.Loop() {
		cacheRaw(make([]byte, 0, 1024), d)
	}
	llmReportCPU(b, cpu)
}

func BenchmarkCacheKey(b *testing.B) {
	d := llmDescriptor("s")
	b.ReportAllocs()
	cpu := llmCPUTime()
	for b.Loop() {
		if _, _, err := cacheCanonical(d, nil); err != nil {
			b.Fatal(err)
		}
	}
	llmReportCPU(b, cpu)
}

// BenchmarkCacheVerdictClone is the defensive copy of a two-axis verdict's
// map that every cache hit pays, so callers may change what they get.
func BenchmarkCacheVerdictClone(b *testing.B) {
	axes := map[string]AxisVerdict{
		AxisActionType: {Classified: Read, Confidence: 0.95, Source: SourceLLM},
		AxisBoundary:   {Classified: IntraOrg, Confidence: 0.9, Source: SourceLLM},
	}
	b.ReportAllocs()
	cpu := llmCPUTime()
	for b.Loop() {
		_ = maps.Clone(axes)
	}
	llmReportCPU(b, cpu)
}
