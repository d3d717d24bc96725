package intercept

import "testing"

// TestLegitimateFormatCharacters: the control/format-character
// refusal (unprintableName: unicode.Cf) also refuses names that real text
// needs: Persian and other scripts write the zero-width non-joiner
// (U+200C) inside words, so a filesystem server's unencoded file:// URI
// for such a file (the official server lists file://<path> as is) cannot
// be read, and an emoji ZWJ sequence (U+200D) cannot name a prompt. Only
// what can disguise a line (C0, DEL, C1, bidi overrides/isolates) needs
// refusing.
func TestLegitimateFormatCharacters(t *testing.T) {
	for _, body := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":"file:///home/u/` + "\u0646\u0627\u0645\u0647\u200c\u0647\u0627" + `.txt"}}`,
		`{"jsonrpc":"2.0","id":1,"method":"prompts/get","params":{"name":"family-` + "\U0001F468\u200d\U0001F469\u200d\U0001F467" + `"}}`,
	} {
		if _, err := DecodeMessage([]byte(body)); err != nil {
			t.Errorf("refused a legitimate name: %v", err)
		}
	}
}
