package policy

import "testing"

func TestSkeleton(t *testing.T) {
	same := [][2]string{
		{"read_document", "Read_Document"},
		{"read_document", "READ_DOCUMENT"},
		{"read_document", "re\u0430d_document"},  // Cyrillic а
		{"read_document", "read_d\u03bfcument"},  // Greek ο
		{"read_document", "read\u200d_document"}, // zero-width joiner
		{"read_document", "read_\u200bdocument"}, // zero-width space
		{"read_document", "read_docu\u00adment"}, // soft hyphen
		{"read_document", "\u2066read_document\u2069"},
		{"read_document", "read_document\U000E0041"},           // tag character
		{"read_document", "\uff52\uff45\uff41\uff44_document"}, // full-width
		{"read_document", "read_docurnent"},                    // rn for m
		{"read_document", "re\u0301ad_document"},               // combining accent
		{"list_files", "Iist_files"},                           // capital I for l
		{"list_files", "1ist_files"},
		{"foo-bar", "foo\u2010bar"}, // Unicode hyphen
		{"web_search", "web_search\u00a0"},
	}
	for _, p := range same {
		if a, b := skeleton(p[0]), skeleton(p[1]); a != b {
			t.Errorf("skeleton(%q) = %q, skeleton(%q) = %q, want equal", p[0], a, p[1], b)
		}
	}
	different := [][2]string{
		{"read_document", "read_documents"},
		{"read_document", "read-document"},
		{"web_search", "web_fetch"},
		{"a", "b"},
	}
	for _, p := range different {
		if a, b := skeleton(p[0]), skeleton(p[1]); a == b {
			t.Errorf("skeleton(%q) = skeleton(%q) = %q, want different", p[0], p[1], a)
		}
	}
}

func TestNFC(t *testing.T) {
	if got := nfc("cafe\u0301"); got != "caf\u00e9" {
		t.Errorf("got %q, want %q", got, "caf\u00e9")
	}
	if got := testing.AllocsPerRun(100, func() { nfc("read_document") }); got != 0 {
		t.Errorf("nfc of an ASCII name: got %v allocs, want 0", got)
	}
}
