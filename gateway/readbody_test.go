package gateway

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

// readBody reads what io.ReadAll does whatever length the body declares:
// the length only sizes the buffer.
func TestReadBodyIsReadAll(t *testing.T) {
	long := strings.Repeat("x", sizedReadMax+3000)
	for _, tt := range []struct {
		name, body string
		size       int64
	}{
		{"empty", "", 0},
		{"exact", `{"jsonrpc":"2.0"}`, 17},
		{"unsaid", `{"jsonrpc":"2.0"}`, -1},
		{"shorter than said", `{"a":1}`, 100},
		{"longer than said", `{"jsonrpc":"2.0","id":1}`, 3},
		{"past the sized buffer", long, int64(len(long))},
	} {
		t.Run(tt.name, func(t *testing.T) {
			for _, r := range []io.Reader{strings.NewReader(tt.body), iotest.OneByteReader(strings.NewReader(tt.body)),
				iotest.DataErrReader(strings.NewReader(tt.body))} {
				got, err := readBody(r, tt.size)
				if err != nil || string(got) != tt.body {
					t.Errorf("got %d bytes, %v; want %d bytes, nil", len(got), err, len(tt.body))
				}
			}
		})
	}
	errBroke := errors.New("broke")
	got, err := readBody(io.MultiReader(strings.NewReader("abc"), iotest.ErrReader(errBroke)), 10)
	if !errors.Is(err, errBroke) || !bytes.Equal(got, []byte("abc")) {
		t.Errorf("got %q, %v; want \"abc\", %v", got, err, errBroke)
	}
}

// A body of the declared length is read into one buffer.
func TestReadBodyOneBuffer(t *testing.T) {
	body := strings.Repeat("y", 5000)
	if n := testing.AllocsPerRun(20, func() { _, _ = readBody(strings.NewReader(body), int64(len(body))) }); n > 2 {
		t.Errorf("readBody of 5000 declared bytes allocates %v times, want at most 2 (the reader, the buffer)", n)
	}
}
