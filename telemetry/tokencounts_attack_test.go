package telemetry

import (
	"encoding/json"
	"slices"
	"testing"
)

// TestTokenCountsAndTokenizersKept: the limits an agent gives an LLM
// tool (max_new_tokens, --max-num-batched-tokens, min_tokens) and the
// tokenizer it names are no credentials. They were redacted, as keys,
// options and argv values, because their names hold "token": the record
// lost what generation or serving an agent asked for, which
// TestAttackCommandLineCredentials meant to keep (--max-tokens 100).
func TestTokenCountsAndTokenizersKept(t *testing.T) {
	for _, text := range []string{
		"python generate.py --max-new-tokens 512 --min-tokens 8",
		"vllm serve m --tokenizer hf-internal/tok --max-num-batched-tokens 8192",
		"text-generation-launcher --max-total-tokens 4096 --max-input-tokens 3000",
		"train.py --num-tokens 4096 --tokenizer_name gpt2",
	} {
		if got := Scrub(text); got != text {
			t.Errorf("Scrub(%q) = %q, want it unchanged", text, got)
		}
	}
	argv := []any{"vllm", "serve", "m", "--tokenizer", "hf-internal/tok", "--max-num-batched-tokens", "8192"}
	if got, _ := (Redactor{}).Redact(argv).([]any); !slices.Equal(got, argv) {
		t.Errorf("Redact(%v) = %v, want it unchanged", argv, got)
	}
	args := `{"max_new_tokens":512,"maxNumTokens":64,"tokenizer":"gpt2","tokenization":"bpe"}`
	kept := Redactor{KeepArguments: true}.Arguments([]byte(args))
	b, _ := json.Marshal(kept.Value)
	var got, want map[string]any
	_ = json.Unmarshal(b, &got)
	_ = json.Unmarshal([]byte(args), &want)
	for k, v := range want {
		if got[k] != v {
			t.Errorf("kept argument %s = %v, want %v", k, got[k], v)
		}
	}
	// Credentials named beside them are still redacted.
	for _, k := range []string{"max_token_secret", "tokenizer_api_key", "access_tokens", "num_auth_tokens_secret", "hf_token"} {
		if !IsSecretKey(k) {
			t.Errorf("IsSecretKey(%q) = false, want true", k)
		}
	}
	if got := Scrub("cmd --tokenizer-secret s3cr3tvalue"); got != "cmd --tokenizer-secret "+Redacted {
		t.Errorf("Scrub of --tokenizer-secret = %q, want its value redacted", got)
	}
}
