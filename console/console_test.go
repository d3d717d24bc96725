package console

import "testing"

func TestTraceLink(t *testing.T) {
	for _, tc := range []struct{ tmpl, id, want string }{
		{"https://jaeger.example/trace/{trace_id}", "4bf92f3577b34da6a3ce929d0e0e4736", "https://jaeger.example/trace/4bf92f3577b34da6a3ce929d0e0e4736"},
		{"https://t.example/?q={trace_id}", "a/b", "https://t.example/?q=a%2Fb"},
		{"javascript:alert({trace_id})", "1", ""},
		{"", "1", ""},
		{"https://t.example/{trace_id}", "", ""},
	} {
		if got := string(traceLink(tc.tmpl, tc.id)); got != tc.want {
			t.Errorf("traceLink(%q, %q) = %q, want %q", tc.tmpl, tc.id, got, tc.want)
		}
	}
}
