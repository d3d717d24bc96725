package classifier

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sony/gobreaker/v2"
	"go.uber.org/goleak"
)

func TestNewLLMOptions(t *testing.T) {
	cases := []struct {
		name    string
		o       LLMOptions
		wantErr string // substring; "" for success
	}{
		{name: "defaults", o: LLMOptions{Provider: ProviderOpenAI}},
		{name: "ollama without key over http", o: LLMOptions{Provider: ProviderOpenAI, BaseURL: "http://gpu-box.lan:11434/v1", Model: "llama3.2:3b"}},
		{name: "key over loopback http", o: LLMOptions{Provider: ProviderOpenAI, BaseURL: "http://127.0.0.1:8000", APIKey: llmTestKey}},
		{name: "key over localhost http", o: LLMOptions{Provider: ProviderAnthropic, BaseURL: "http://localhost:8000", APIKey: llmTestKey}},
		{name: "no provider", o: LLMOptions{}, wantErr: `provider ""`},
		{name: "unknown provider", o: LLMOptions{Provider: "bedrock"}, wantErr: `provider "bedrock"`},
		{name: "bad base URL", o: LLMOptions{Provider: ProviderGemini, BaseURL: "generativelanguage.googleapis.com"}, wantErr: "base URL"},
		{name: "key over remote http", o: LLMOptions{Provider: ProviderOpenAI, BaseURL: "http://vllm.corp:8000", APIKey: llmTestKey}, wantErr: "use https"},
		{name: "key with newline", o: LLMOptions{Provider: ProviderOpenAI, APIKey: llmTestKey + "\n"}, wantErr: "control characters"},
		{name: "negative timeout", o: LLMOptions{Provider: ProviderOpenAI, Timeout: -1}, wantErr: "negative timeout"},
		{name: "negative breaker timeout", o: LLMOptions{Provider: ProviderOpenAI, BreakerTimeout: -1}, wantErr: "negative breaker timeout"},
		{name: "bad weights", o: LLMOptions{Provider: ProviderOpenAI, Weights: PerAxis{Boundary: -1}}, wantErr: "weights.boundary"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			l, err := NewLLM(tc.o)
			if tc.wantErr == "" {
				if err != nil {
					t.Fatalf("got %v, want no error", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("got %v, want an error containing %q", err, tc.wantErr)
			}
			if strings.Contains(err.Error(), testKeyFragment) {
				t.Errorf("error %q contains the key", err)
			}
			if l != nil {
				t.Error("got an LLM with the error")
			}
		})
	}

	l := mustLLM(t, LLMOptions{Provider: ProviderGemini})
	if l.timeout != 2*time.Second || l.conn.model != "gemini-2.5-flash" || l.conn.base != "https://generativelanguage.googleapis.com" ||
		len(l.schema.axes) != 2 || l.schema.scoring.Profile != ProfileDefault || l.cache == nil {
		t.Errorf("defaults: got %+v", l)
	}
}

// TestLLMKeyNeverShown prints options and classifier every way a log line
// might, and collects every error a failing provider produces.
func TestLLMKeyNeverShown(t *testing.T) {
	f := newFakeLLM(t, ProviderOpenAI)
	f.setMode(llm5xx)
	_, o := f.serve()
	l := mustLLM(t, o)

	var out []string
	for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%q", "%x", "%d"} {
		out = append(out, fmt.Sprintf(verb, o), fmt.Sprintf(verb, l), fmt.Sprintf(verb, &o))
	}
	out = append(out, l.String(), o.String())
	var buf bytes.Buffer
	slog.New(slog.NewJSONHandler(&buf, nil)).Info("classifier", "options", o, "llm", l)
	out = append(out, buf.String())

	ctx := context.Background()
	_, err := l.Classify(ctx, llmDescriptor("s"))
	out = append(out, fmt.Sprint(err))
	out = append(out, fmt.Sprint(l.Probe(ctx)))
	_, err = l.Classify(ctx, llmDescriptor("s")) // inactive now
	out = append(out, fmt.Sprint(err))
	f.setMode(llmSlow)
	o.Timeout = 50 * time.Millisecond
	_, err = mustLLM(t, o).Classify(ctx, llmDescriptor("s"))
	out = append(out, fmt.Sprint(err))
	o.BaseURL = llmClosedURL(t)
	_, err = mustLLM(t, o).Classify(ctx, llmDescriptor("s"))
	out = append(out, fmt.Sprint(err))

	// A password in the base URL (a proxy's credentials) is a key too.
	withPass := o
	withPass.BaseURL = strings.Replace(withPass.BaseURL, "://", "://user:"+testKeyFragment+"@", 1)
	lp := mustLLM(t, withPass)
	out = append(out, lp.String(), withPass.String(), fmt.Sprintf("%#v", withPass))
	buf.Reset()
	slog.New(slog.NewJSONHandler(&buf, nil)).Info("classifier", "options", withPass, "llm", lp)
	out = append(out, buf.String())
	_, err = lp.Classify(ctx, llmDescriptor("s"))
	out = append(out, fmt.Sprint(err))

	for _, s := range out {
		if strings.Contains(s, testKeyFragment) || strings.Contains(s, fmt.Sprintf("%x", llmTestKey)[:24]) {
			t.Errorf("output shows the key: %s", s)
		}
	}
	if !strings.Contains(out[0], "[REDACTED]") {
		t.Errorf("got %s, want the key shown as [REDACTED]", out[0])
	}
}

func TestLLMProbe(t *testing.T) {
	for _, p := range llmProviders {
		t.Run(string(p), func(t *testing.T) {
			f := newFakeLLM(t, p)
			_, o := f.serve()
			l := mustLLM(t, o)
			ctx := context.Background()
			if err := l.Probe(ctx); err != nil || !l.Active() {
				t.Fatalf("healthy provider: got %v active %v, want nil true", err, l.Active())
			}

			f.setMode(llm5xx)
			if err := l.Probe(ctx); err == nil || l.Active() {
				t.Fatalf("failing provider: got %v active %v, want an error and inactive", err, l.Active())
			}
			// Inactive: every call is the fallback, with no request.
			f.setMode(llmGood)
			calls := f.calls.Load()
			v, err := l.Classify(ctx, llmDescriptor("s"))
			if !errors.Is(err, ErrInactive) || f.calls.Load() != calls {
				t.Errorf("inactive: got %v after %d requests, want ErrInactive and none", err, f.calls.Load()-calls)
			}
			llmCheckFallback(t, v, AxisActionType, AxisBoundary)
			if v.SessionID != "s" {
				t.Errorf("got session %q, want s", v.SessionID)
			}

			if err := l.Probe(ctx); err != nil || !l.Active() {
				t.Fatalf("recovered provider: got %v active %v, want nil true", err, l.Active())
			}
			if _, err := l.Classify(ctx, llmDescriptor("s")); err != nil {
				t.Errorf("after recovery: got %v, want a verdict", err)
			}
			if n := f.probes.Load(); n != 3 {
				t.Errorf("got %d probe requests, want 3", n)
			}
		})
	}
}

func TestLLMProbeUnreachable(t *testing.T) {
	l := mustLLM(t, LLMOptions{Provider: ProviderGemini, BaseURL: llmClosedURL(t), APIKey: llmTestKey})
	err := l.Probe(context.Background())
	if err == nil || l.Active() {
		t.Fatalf("got %v active %v, want an error and inactive", err, l.Active())
	}
	if !strings.Contains(err.Error(), "inactive") {
		t.Errorf("got %q, want it to say the classifier is inactive", err)
	}
}

func TestLLMCallerDeadline(t *testing.T) {
	f := newFakeLLM(t, ProviderAnthropic)
	f.setMode(llmSlow)
	_, o := f.serve()
	l := mustLLM(t, o) // default 2s timeout
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	start := time.Now()
	v, err := l.Classify(ctx, llmDescriptor("s"))
	if err == nil || time.Since(start) > time.Second {
		t.Errorf("got %v after %v, want an error at the caller's deadline", err, time.Since(start))
	}
	llmCheckFallback(t, v, AxisActionType, AxisBoundary)
}

// TestLLMStallMidBody: a provider that answers 200, sends half its reply
// and then nothing yields the low-confidence fallback within the timeout,
// for each of many concurrent calls at once (none waits for another's
// stall), and the breaker opens after five: a stall counts as the
// provider's failure, the calls after it are not sent.
func TestLLMStallMidBody(t *testing.T) {
	f := newFakeLLM(t, ProviderOpenAI)
	f.setMode(llmStallBody)
	_, o := f.serve()
	o.Timeout = 200 * time.Millisecond
	l := mustLLM(t, o)
	const n = 8
	took := make([]time.Duration, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			start := time.Now()
			var v Verdict
			v, errs[i] = l.Classify(context.Background(), llmDescriptor(fmt.Sprint("s", i)))
			took[i] = time.Since(start)
			if v.CompositeConfidence != 0 {
				t.Errorf("call %d: got composite %v, want the fallback's 0", i, v.CompositeConfidence)
			}
		})
	}
	wg.Wait()
	for i := range n {
		if errs[i] == nil || took[i] > time.Second {
			t.Errorf("call %d of %d concurrent ones, the provider stalled mid-body: got %v after %s, want an error within the 200ms timeout", i, n, errs[i], took[i].Round(time.Millisecond))
		}
	}
	if got := l.BreakerState(); got != gobreaker.StateOpen {
		t.Errorf("breaker after %d stalls: got %v, want open", n, got)
	}
	before := f.calls.Load()
	start := time.Now()
	if _, err := l.Classify(context.Background(), llmDescriptor("after")); err == nil || time.Since(start) > 50*time.Millisecond {
		t.Errorf("with the breaker open: got %v after %s, want an error at once", err, time.Since(start))
	}
	if f.calls.Load() != before {
		t.Errorf("with the breaker open: the provider was asked")
	}
}

func TestLLMNoGoroutineLeak(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	for _, mode := range []fakeLLMMode{llmGood, llmSlow, llm5xx} {
		f := newFakeLLM(t, ProviderOpenAI)
		f.setMode(mode)
		srv, o := f.serve()
		o.Timeout = 50 * time.Millisecond
		l := mustLLM(t, o)
		_, _ = l.Classify(context.Background(), llmDescriptor("s"))
		_ = l.Probe(context.Background())
		o.HTTPClient.Transport.(interface{ CloseIdleConnections() }).CloseIdleConnections()
		srv.Close()
	}
}

func TestLoadKey(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "key")
	if err := os.WriteFile(good, []byte("  "+llmTestKey+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	empty := filepath.Join(dir, "empty")
	if err := os.WriteFile(empty, []byte("\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	twoLines := filepath.Join(dir, "two")
	if err := os.WriteFile(twoLines, []byte(llmTestKey+"\n"+llmTestKey+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("SLUICE_TEST_LLM_KEY", " "+llmTestKey+" ")
	t.Setenv("SLUICE_TEST_LLM_EMPTY", "")

	cases := []struct {
		name, env, file, want string
		wantErr               bool
	}{
		{name: "env", env: "SLUICE_TEST_LLM_KEY", want: llmTestKey},
		{name: "file", file: good, want: llmTestKey},
		{name: "neither", want: ""},
		{name: "both", env: "SLUICE_TEST_LLM_KEY", file: good, wantErr: true},
		{name: "empty env", env: "SLUICE_TEST_LLM_EMPTY", wantErr: true},
		{name: "unset env", env: "SLUICE_TEST_LLM_UNSET", wantErr: true},
		{name: "missing file", file: filepath.Join(dir, "nope"), wantErr: true},
		{name: "empty file", file: empty, wantErr: true},
		{name: "two lines", file: twoLines, wantErr: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := LoadKey(tc.env, tc.file)
			if (err != nil) != tc.wantErr || got != tc.want {
				t.Fatalf("got %q, %v; want %q, error %v", got, err, tc.want, tc.wantErr)
			}
			if err != nil && strings.Contains(err.Error(), testKeyFragment) {
				t.Errorf("error %q contains the key", err)
			}
		})
	}
}

// TestLLMConcurrent runs many callers through the cache and the breaker
// while the provider flips between healthy and failing; run with -race.
func TestLLMConcurrent(t *testing.T) {
	f := newFakeLLM(t, ProviderOpenAI)
	_, o := f.serve()
	o.CacheSize = 8
	o.BreakerFailures = 3
	o.BreakerTimeout = 10 * time.Millisecond
	o.Timeout = 200 * time.Millisecond
	l := mustLLM(t, o)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 40 {
				if g == 0 && i%10 == 0 {
					f.setMode(fakeLLMMode(i / 10 % 2 * int(llm5xx)))
				}
				d := llmDescriptor(fmt.Sprint("s", g))
				d.ToolName = fmt.Sprint("tool_", i%12)
				v, err := l.Classify(context.Background(), d)
				if err != nil {
					if v.CompositeConfidence != 0 {
						t.Errorf("got composite %v with error %v, want 0", v.CompositeConfidence, err)
					}
					continue
				}
				if v.Axes.Get(AxisActionType).Classified != Read || v.SessionID != d.SessionID {
					t.Errorf("got %+v, want Read for %s", v, d.SessionID)
				}
				v.Axes.Set(AxisActionType, AxisVerdict{}) // callers own their copy
			}
		})
	}
	wg.Wait()
}
