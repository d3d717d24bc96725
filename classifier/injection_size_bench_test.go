package classifier

import (
	"encoding/base64"
	"strings"
	"testing"

	"github.com/go-json-experiment/json/jsontext"
)

// bigBlobResult is a resources/read result whose one text blob decodes
// to n bytes of prose.
func bigBlobResult(tb testing.TB, n int) jsontext.Value {
	para := "The quarterly report shows revenue of 4.2 million, up 12 percent; see the appendix for details. "
	text := strings.Repeat(para, n/len(para)+1)[:n]
	return resultJSON(tb, map[string]any{"contents": []any{map[string]any{
		"uri": "file:///r.txt", "mimeType": "text/plain", "blob": base64.StdEncoding.EncodeToString([]byte(text))}}})
}

// tinyBlocksResult is a tool result of n one-byte text blocks.
func tinyBlocksResult(tb testing.TB, n int) jsontext.Value {
	blocks := make([]any, n)
	for i := range blocks {
		blocks[i] = map[string]any{"type": "text", "text": string(rune('a' + i%26))}
	}
	return resultJSON(tb, map[string]any{"content": blocks})
}

// BenchmarkDetectInjectionInResultBlob32MiB is the cost, in time and
// allocations (-benchmem), of screening the largest answer the gateway
// reads by default (max_answer_bytes, 32 MiB): one text blob.
func BenchmarkDetectInjectionInResultBlob32MiB(b *testing.B) {
	v := bigBlobResult(b, 24<<20) // 32 MiB of base64
	b.SetBytes(int64(len(v)))
	b.ReportAllocs()
	for b.Loop() {
		if fs := DetectInjectionInResult(v); len(fs) != 0 {
			b.Fatal(fs)
		}
	}
}

// BenchmarkDetectInjectionInResultTinyBlocks4MiB is the same for a tool
// result of 4 MiB of one-byte text blocks, read joined.
func BenchmarkDetectInjectionInResultTinyBlocks4MiB(b *testing.B) {
	v := tinyBlocksResult(b, 4<<20/30) // ~30 bytes of JSON a block
	b.SetBytes(int64(len(v)))
	b.ReportAllocs()
	for b.Loop() {
		DetectInjectionInResult(v)
	}
}
