package aead

import (
	"bytes"
	"strings"
	"testing"
)

func TestFromKeys(t *testing.T) {
	cur, prev := bytes.Repeat([]byte{1}, 32), bytes.Repeat([]byte{2}, 32)
	as, err := FromKeys([][]byte{cur, prev}, "session key")
	if err != nil || len(as) != 2 {
		t.Fatalf("FromKeys: %d AEADs, %v", len(as), err)
	}
	nonce := make([]byte, as[1].NonceSize())
	sealed := as[1].Seal(nil, nonce, []byte("hi"), nil)
	if _, err := as[0].Open(nil, nonce, sealed, nil); err == nil {
		t.Error("the current key opened what the previous sealed")
	}
	if got, err := as[1].Open(nil, nonce, sealed, nil); err != nil || string(got) != "hi" {
		t.Errorf("the previous key: %q, %v", got, err)
	}
	if _, err := FromKeys([][]byte{cur, []byte("short")}, "session key"); err == nil || !strings.Contains(err.Error(), "session key 2 is 5 bytes") {
		t.Errorf("a short key: %v", err)
	}
}
