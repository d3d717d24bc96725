package main

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestConfigAliasBomb: merge keys naming the same anchor twice, each
// level twice the one below, made a config of 600 bytes stand for 2^24
// audit sections. The key check walked every one of them, the decoder
// merged every one, and since ed5e852 the value check wrote an error for
// each (n=20: 9 s and 1 GB; n=24 did not finish). Such a config is
// refused before any of them, naming what to do.
func TestConfigAliasBomb(t *testing.T) {
	for _, val := range []string{"720h", "30d"} {
		t.Run(val, func(t *testing.T) {
			s := "&l0 {retention: " + val + "}"
			for k := 1; k <= 24; k++ {
				s = fmt.Sprintf("&l%d {<<: %s, <<: *l%d}", k, s, k-1)
			}
			done := make(chan error, 1)
			go func() {
				_, err := parseConfig("bomb.yaml", []byte("audit: "+s+"\n"))
				done <- err
			}()
			select {
			case err := <-done:
				if err == nil || !strings.Contains(err.Error(), "bomb.yaml") || !strings.Contains(err.Error(), "aliases") {
					t.Errorf("got %v, want the config refused for what its aliases expand to", err)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("parseConfig of a 24-level alias bomb: still going after 10 s")
			}
		})
	}
	// A config that repeats a section by alias, as configs do, passes.
	ok := "upstreams:\n  - &up {name: a, url: 'http://127.0.0.1:9/mcp', headers: {X-A: '1'}}\n  - {<<: *up, name: b}\n"
	if _, err := parseConfig("ok.yaml", []byte(ok)); err != nil {
		t.Errorf("a config with a merge key: %v", err)
	}
}
