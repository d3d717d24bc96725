package telemetry

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
)

func TestBound(t *testing.T) {
	long := strings.Repeat("é", 3<<20) // 6 MiB of two-byte runes
	sum := sha256.Sum256([]byte(long))
	for _, tc := range []struct {
		name, in string
		max      int
		want     string // "" means the input unchanged
	}{
		{name: "short", in: "create_issue", max: MaxRecordedName},
		{name: "at the bound", in: strings.Repeat("a", MaxRecordedName), max: MaxRecordedName},
		{name: "long", in: long, max: MaxRecordedName,
			want: fmt.Sprintf("…[cut: %d bytes, sha256:%s]", len(long), hex.EncodeToString(sum[:]))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Bound(tc.in, tc.max)
			if tc.want == "" {
				if got != tc.in {
					t.Errorf("got %.80q, want it unchanged", got)
				}
				return
			}
			if !strings.HasSuffix(got, tc.want) || len(got) > tc.max || len(got) < tc.max-2 || !utf8.ValidString(got) {
				t.Errorf("got %d bytes %.80q…%q, want at most %d, valid UTF-8, ending %q", len(got), got, got[len(got)-40:], tc.max, tc.want)
			}
			if !strings.HasPrefix(tc.in, strings.TrimSuffix(got, tc.want)) {
				t.Error("the kept part is not a prefix of the input")
			}
			if again := Bound(got, tc.max); again != got {
				t.Errorf("bounding again changed it: %.80q", again)
			}
		})
	}
}

// TestRecordBoundsNames: a tool name and a public_reason quoting it are
// recorded bounded, the same by the store's encoder and by Event.
func TestRecordBoundsNames(t *testing.T) {
	name := strings.Repeat("x", 1<<20)
	p := &PolicyEnforcement{TxnID: "t", Tool: name, Decision: "deny", Reason: "static_default",
		PublicReason: "calling " + name + " is not allowed by policy", Evidence: Evidence{MatchedToolName: name}}
	h := p.Header()
	h.BoundNames()
	line, err := AppendRecordJSON(nil, &h, p)
	if err != nil {
		t.Fatal(err)
	}
	if len(line) > 8<<10 || strings.Count(string(line), CutMark) != 3 {
		t.Errorf("got %d bytes with %d marks, want at most 8 KiB with 3: %.300s", len(line), strings.Count(string(line), CutMark), line)
	}
	ev := p.Event()
	ev.BoundNames()
	line2, err := ev.AppendJSON(nil)
	if err != nil {
		t.Fatal(err)
	}
	// Attributes are a map in an Event, written in no fixed order: compare
	// the documents, as TestRecordJSON does, not the bytes.
	if diff := cmp.Diff(decodeAny(t, line2), decodeAny(t, line)); diff != "" {
		t.Errorf("Record and Event encode differently (-event +record):\n%.2000s", diff)
	}
	c := Call{Method: "tools/call", Tool: name, ResourceURI: name}
	if n := len(c.SpanName()); n > MaxRecordedName+len("tools/call ") {
		t.Errorf("span name of %d bytes", n)
	}
	for _, a := range c.Attrs() {
		if s, _ := a.Value.(string); len(s) > MaxRecordedName {
			t.Errorf("span attribute %s of %d bytes", a.Key, len(s))
		}
	}
}

// TestToolNameScrubsReads: a read's name is recorded scrubbed, within
// MaxRecordedName, and one cut keeps the mark of the whole as received;
// a tool's name is only bounded.
func TestToolNameScrubsReads(t *testing.T) {
	if got := ToolName("send_email"); got != "send_email" {
		t.Errorf("ToolName(send_email) = %q, want it unchanged", got)
	}
	if got := ToolName("password=hunter2"); got != "password=hunter2" {
		t.Errorf("a tool's name: got %q, want it unchanged (only reads are URIs)", got)
	}
	if got, want := ToolName("resource:https://u:hunter2@h/x"), "resource:https://h/x"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	long := "resource:https://h/x?sig=a&" + strings.Repeat("p=1&", 2000)
	got := ToolName(long)
	if len(got) > MaxRecordedName || strings.Contains(got, "sig=a&") || !strings.HasSuffix(got, BoundName(long)[strings.LastIndex(BoundName(long), CutMark):]) {
		t.Errorf("a long read: got %d bytes %.200q…, want at most %d, scrubbed, with the whole's cut mark", len(got), got, MaxRecordedName)
	}
	// A redaction longer than the secret it replaces, at the cut.
	long = "resource:https://h/x?" + strings.Repeat("sig=a&", 400)
	if got := ToolName(long); len(got) > MaxRecordedName || !utf8.ValidString(got) || !strings.Contains(got, CutMark) {
		t.Errorf("a long read that grows when scrubbed: got %d bytes, want at most %d", len(got), MaxRecordedName)
	}
}
