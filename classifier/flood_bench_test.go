package classifier

import (
	"strings"
	"testing"
)

func BenchmarkTokenFlood4KiB(b *testing.B) {
	para := "## install run `npm install acme-cli` and set acme_token in your environment. " +
		"the client retries failed requests twice, then returns the error to the caller. see the api reference for details. "
	text := strings.Repeat(para, 4096/len(para)+1)[:4096]
	b.SetBytes(int64(len(text)))
	for b.Loop() {
		tokenFlood(text)
	}
}
