package classifier

import "testing"

func TestEnvNameKind(t *testing.T) {
	for _, tt := range []struct {
		name string
		want envKind
	}{
		{"ACME_API_KEY", envCredential},
		{"AWS_SECRET_ACCESS_KEY", envCredential},
		{"CHANNEL_ACCESS_TOKEN", envCredential},
		{"GITHUB_PAT", envCredential},
		{"XERO_CLIENT_SECRET", envCredential},
		{"GOOGLE_APPLICATION_CREDENTIALS", envCredential},
		{"GDRIVE_CREDENTIALS_PATH", envCredential},
		{"acmeApiKey", envNone}, // one word: not read as a key
		{"MAX_TOKENS", envNone}, // a model's budget, not a token
		{"DB_PASSWORD", envService},
		{"ACME_HOST_URL", envService},
		{"AWS_REGION", envService},
		{"KUBECONFIG", envNone},
		{"LOG_LEVEL", envNone},
		{"GODOT_PATH", envNone},
		{"npm_config_ignore_scripts", envNone},
		{"", envNone},
	} {
		if got := envNameKind(tt.name); got != tt.want {
			t.Errorf("envNameKind(%q) = %d, want %d", tt.name, got, tt.want)
		}
	}
	for _, tt := range []struct {
		names []string
		want  envKind
	}{
		{nil, envNone},
		{[]string{"LOG_LEVEL", "KUBECONFIG"}, envNone},
		{[]string{"ACME_URL", "LOG_LEVEL"}, envService},
		{[]string{"ACME_URL", "ACME_TOKEN"}, envCredential},
	} {
		if got := envNamesKind(tt.names); got != tt.want {
			t.Errorf("envNamesKind(%q) = %d, want %d", tt.names, got, tt.want)
		}
	}
}

func TestCredentialFlag(t *testing.T) {
	for _, tt := range []struct {
		cmd  string
		want bool
	}{
		{"npx -y acme-mcp --api-key placeholder", true},
		{"npx -y acme-mcp --apiKey=placeholder", true},
		{"npx -y acme-mcp --token placeholder", true},
		{"npx -y acme-mcp --access-token=x", true},
		{"npx -y acme-mcp --accessToken x", true},
		{"npx -y acme-mcp --acme_api_token=x", true},
		{"npx -y acme-mcp --client-secret x", true},
		{"npx -y token-counter-mcp", false}, // a package's name, no flag
		{"npx -y acme-mcp --max-tokens 40", false},
		{"npx -y acme-mcp --token-limit 40", false},
		{"npx -y acme-mcp --password x", false}, // a local database's too
		{"npx -y acme-mcp --headless", false},
		{"", false},
	} {
		if got := credentialFlag(tt.cmd); got != tt.want {
			t.Errorf("credentialFlag(%q) = %v, want %v", tt.cmd, got, tt.want)
		}
	}
}

// TestEnvNamesPrior: for a stdio server naming no service, whose call
// names no URL or path, what the operator gives the server sets how sure
// the prior's External is; it never moves the zone, and it does not
// touch a server whose name or arguments place the call.
func TestEnvNamesPrior(t *testing.T) {
	b := mustBuiltin(t, Options{Upstreams: map[string]UpstreamConfig{
		"keyed":    {EnvNames: []string{"ACME_API_KEY", "LOG_LEVEL"}},
		"bare":     {EnvNames: []string{}},
		"local":    {EnvNames: []string{"LOG_LEVEL", "WIDGET_PATH"}},
		"dsn":      {EnvNames: []string{"WIDGET_DB_URL", "WIDGET_DB_PASSWORD"}},
		"zoned":    {Zone: IntraOrg, EnvNames: []string{}},
		"named":    {EnvNames: []string{}},
		"withpath": {EnvNames: []string{}},
	}})
	const widget = "stdio:npx -y widgetry-mcp@1.0.0"
	for _, tt := range []struct {
		name string
		call builtinCall
		want string
		conf float64
		cons bool // the conservative default applied
	}{
		{"a credential in the environment", builtinCall{upstream: "keyed", target: widget, tool: "update_widget"}, External, 0.85, false},
		{"a credential on the command line", builtinCall{upstream: "other", target: widget + " --api-key x", tool: "update_widget"}, External, 0.85, false},
		{"nothing given", builtinCall{upstream: "bare", target: widget, tool: "update_widget"}, External, 0.55, true},
		{"only local settings given", builtinCall{upstream: "local", target: widget, tool: "update_widget"}, External, 0.55, true},
		{"an address and a password: somewhere, maybe here", builtinCall{upstream: "dsn", target: widget, tool: "update_widget"}, External, 0.65, false},
		{"not known", builtinCall{upstream: "other", target: widget, tool: "update_widget"}, External, 0.65, false},
		{"a configured zone wins", builtinCall{upstream: "zoned", target: widget, tool: "update_widget"}, IntraOrg, 1, false},
		{"a service's name wins", builtinCall{upstream: "named", target: "stdio:npx -y @modelcontextprotocol/server-slack", tool: "slack_post_message"}, External, 0.9, false},
		{"a local path wins", builtinCall{upstream: "withpath", target: widget, tool: "update_widget", args: `{"path":"/home/u/w.json"}`}, Local, 0.65, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := classifyOne(t, b, tt.call).Axes.Get(AxisBoundary)
			if got.Classified != tt.want || got.Confidence != tt.conf || got.ConservativeDefaultApplied != tt.cons {
				t.Errorf("got %+v, want %s at %.2f (conservative default %v)", got, tt.want, tt.conf, tt.cons)
			}
		})
	}
}

func TestEnvNamesOption(t *testing.T) {
	// Nil is not known; empty is known to be none.
	c, err := compile(Options{Upstreams: map[string]UpstreamConfig{"a": {}, "b": {EnvNames: []string{}}, "c": {EnvNames: []string{"X_TOKEN"}}}})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := c.envs["a"]; ok {
		t.Errorf("nil EnvNames recorded as known: %v", c.envs["a"])
	}
	if c.envs["b"] != envNone || c.envs["c"] != envCredential {
		t.Errorf("envs = %v, want b none, c credential", c.envs)
	}
}
