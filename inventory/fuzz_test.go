package inventory

import (
	"os"
	"testing"

	"github.com/go-json-experiment/json/jsontext"
)

// FuzzParsePage feeds untrusted tools/list results through parsing,
// hashing, scanning and diffing. None may panic, and a parsed page must
// always make a snapshot that verifies.
func FuzzParsePage(f *testing.F) {
	f.Add([]byte(`{"tools":[{"name":"a","description":"<IMPORTANT>x</IMPORTANT>","inputSchema":{"type":"object","properties":{"p":{"description":"\u200b"}}}}]}`))
	f.Add([]byte(`{"tools":[{"name":"a","annotations":{"title":"t","readOnlyHint":true}},{"name":"b","outputSchema":null}],"nextCursor":"c"}`))
	f.Add([]byte(`{"tools":[{"name":"\udb40\udc41","description":"\u001b[8m"}]}`))
	f.Add([]byte(`{"tools":[]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		p, err := ParsePage(jsontext.Value(b))
		if err != nil {
			return
		}
		snap, err := newSnapshot("u", p.Tools, clock())
		if err != nil {
			t.Fatalf("ParsePage accepted what newSnapshot rejects: %v", err)
		}
		if err := snap.verify(); err != nil {
			t.Fatalf("fresh snapshot does not verify: %v", err)
		}
		for _, tool := range snap.Tools {
			Scan(tool, ScanOptions{ForeignTools: []string{"send_message"}})
		}
		if len(snap.Tools) > 0 {
			other := *snap
			other.Tools = snap.Tools[1:]
			diffSnapshots(&other, snap)
			d := &Diff{Upstream: "u", Pinned: infoOf(&other), Observed: infoOf(snap), Changes: diffSnapshots(snap, &other)}
			_ = d.String()
		}
	})
}

// FuzzStoreDecode feeds arbitrary bytes to the snapshot file decoder,
// which reads files an attacker with disk access may have written.
func FuzzStoreDecode(f *testing.F) {
	s := NewStore(f.TempDir(), testKey(f))
	if err := s.Save(Pinned, testSnapshot(f, "u")); err != nil {
		f.Fatal(err)
	}
	good, err := os.ReadFile(s.Path(Pinned, "u"))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(good)
	f.Add([]byte(`{"format":"sluice.inventory.snapshot/v1","kind":"pinned","snapshot":{}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		snap, err := s.decode(Pinned, "u", b)
		if err == nil && snap.verify() != nil {
			t.Fatal("decode accepted a snapshot that does not verify")
		}
	})
}
