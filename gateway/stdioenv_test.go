package gateway

import (
	"strings"
	"testing"
)

func TestCheckInheritEnv(t *testing.T) {
	tests := []struct {
		up      Upstream
		wantErr string
	}{
		{Upstream{Command: "x", InheritEnv: []string{"LANG", "AWS_*", "*"}}, ""},
		{Upstream{Command: "x", InheritEnv: []string{"A=B"}}, `inherit_env[0]: "A=B" is not a variable name`},
		{Upstream{Command: "x", InheritEnv: []string{"LANG", ""}}, `inherit_env[1]: "" is not`},
		{Upstream{Command: "x", InheritEnv: []string{"A*B"}}, `"A*B" is not`},
		{Upstream{URL: "http://x", InheritEnv: []string{"LANG"}}, "only to stdio upstreams"},
	}
	for _, tt := range tests {
		err := tt.up.CheckInheritEnv()
		if (err == nil) != (tt.wantErr == "") || (err != nil && !strings.Contains(err.Error(), tt.wantErr)) {
			t.Errorf("CheckInheritEnv(%q): got %v, want %q", tt.up.InheritEnv, err, tt.wantErr)
		}
	}
}

func TestInheritEnvPatterns(t *testing.T) {
	up := Upstream{Command: "x", InheritEnv: []string{"AWS_*", "ADMIN_TOKEN", "SLUICE_NAMED"}, WithholdEnv: []string{"AWS_REDIS", "ADMIN_TOKEN"}}
	inherit := up.inheritEnv()
	for name, want := range map[string]bool{
		"PATH":         true,  // the default set
		"AWS_REGION":   true,  // the pattern
		"AWS_REDIS":    false, // withheld: the pattern does not pass it
		"ADMIN_TOKEN":  true,  // withheld, but named in full
		"SLUICE_OTHER": false, // the gateway's own
		"SLUICE_NAMED": true,  // named in full
		"OTHER":        false,
	} {
		if got := inherit(name); got != want {
			t.Errorf("inherit(%s): got %v, want %v", name, got, want)
		}
	}
	if (&Upstream{Command: "x"}).inheritEnv() != nil {
		t.Error("no inherit_env: got a filter, want nil (the default set)")
	}
}
