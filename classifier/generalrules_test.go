package classifier

import "testing"

// A read given the data it works on, naming nothing kept elsewhere, on a
// server that names no service, computes over its arguments: Local. A
// reference to a resource, a filter or an OpenAPI request wrapper keeps
// the prior.
func TestReadOverInlineDataIsLocal(t *testing.T) {
	b := mustBuiltin(t, Options{})
	const target = "stdio:npx -y acme-widgets-mcp@1.0.0"
	for _, c := range []struct {
		tool, args string
		want       string
	}{
		{"suggest_charts", `{"data":[{"month":"2026-08","signups":420},{"month":"2026-09","signups":510}]}`, Local},
		{"render_chart", `{"component":"LineChart","props":{"data":[{"x":1,"y":2}],"width":600}}`, Local},
		{"validate_diagram", `{"diagram":"graph TD\n  A-->B\n  B-->C"}`, Local},
		{"list_issues", `{"repository":"webapp","options":{"levels":["Error"],"categories":["performance"]}}`, External},
		{"get_entries", `{"request":{"spec":"proj/default","limit":20}}`, External},
		{"search_records", `{"filter":{"status":"open","owner":"me"}}`, External},
		{"update_records", `{"rows":[{"id":1,"v":2},{"id":2,"v":3}]}`, External},
		{"get_prices", `{"items":[{"sku":"a","qty":2},{"sku":"b","qty":1}]}`, External},
	} {
		got := classifyOne(t, b, builtinCall{target: target, tool: c.tool, args: c.args}).Axes[AxisBoundary]
		if got.Classified != c.want {
			t.Errorf("%s %s: got %s (%.2f, %s), want %s", c.tool, c.args, got.Classified, got.Confidence, got.Source, c.want)
		}
	}
}

// A tool whose answer a model works out is remote computation (§5.2),
// Execute, even where the server calls it read-only; a search a model
// only ranks still reads.
func TestModelComputedAnswerIsExecute(t *testing.T) {
	b := mustBuiltin(t, Options{})
	const target = "stdio:npx -y acme-widgets-mcp@1.0.0"
	ro := `{"readOnlyHint":true}`
	for _, c := range []struct {
		tool, desc, ann, want string
	}{
		{"explain_query", "Explain a query in natural language using the Acme Copilot AI.", ro, Execute},
		{"summarize_thread", "Summarize a thread with an LLM", "", Execute},
		{"discover", "Search the web and rank results by AI-driven relevance", ro, Read},
		{"get_summary", "Get the summary produced by AI for a record", "", Read},
		{"explain_query", "Explain what a query does", ro, Read},
	} {
		got := classifyOne(t, b, builtinCall{target: target, tool: c.tool, desc: c.desc, ann: c.ann}).Axes[AxisActionType]
		if got.Classified != c.want {
			t.Errorf("%s %q: got %s (%.2f, %s), want %s", c.tool, c.desc, got.Classified, got.Confidence, got.Source, c.want)
		}
	}
}

// A tool whose name says only a change is Provision when its
// description's object is something provisioned (its head noun, before
// any preposition), below the high band as the name does not say so.
func TestDescriptionObjectProvisions(t *testing.T) {
	b := mustBuiltin(t, Options{})
	const target = "stdio:npx -y acme-widgets-mcp@1.0.0"
	for _, c := range []struct {
		tool, desc, want string
	}{
		{"createMock", "Creates a mock server in a collection.", Provision},
		{"write_apex_trigger", "Create or update Apex triggers in the org.", Provision},
		{"create_card_item", "Create a new app card item on a board", Write},
		{"deactivate_license", "Deactivate a license key instance.", Write},
		{"sync_items", "Sync an entire project to the local cache", Write},
	} {
		got := classifyOne(t, b, builtinCall{target: target, tool: c.tool, desc: c.desc}).Axes[AxisActionType]
		if got.Classified != c.want || got.Classified == Provision && got.Confidence >= 0.9 {
			t.Errorf("%s %q: got %s (%.2f, %s), want %s below 0.9", c.tool, c.desc, got.Classified, got.Confidence, got.Source, c.want)
		}
	}
}

// A service's server, named or configured, is where its tools go; a tool
// that may stay on this host (the client's connections, a computation,
// or one whose words say nothing of what it does) keeps the zone below
// the high band.
func TestMayStayOnHostBelowHighBand(t *testing.T) {
	b := mustBuiltin(t, Options{Upstreams: map[string]UpstreamConfig{"db": {Zone: IntraOrg}}})
	for _, c := range []struct {
		upstream, target, tool, desc string
		want                         string
		conf                         float64
	}{
		{"", "stdio:npx -y slack-mcp-server@1.0.0", "send_message", "Send a message to a channel", External, 0.9},
		{"", "stdio:npx -y slack-mcp-server@1.0.0", "perform_system_repair", "Attempt to automatically repair common system issues", External, 0.85},
		{"", "stdio:npx -y slack-mcp-server@1.0.0", "get_function_code", "Get function code from the templates", External, 0.85},
		{"db", "stdio:db-tools", "run_query", "Run a query on the database", IntraOrg, 1},
		{"db", "stdio:db-tools", "list_connections", "List the connections", IntraOrg, 0.85},
		{"db", "stdio:db-tools", "format_sql", "Format a SQL statement", IntraOrg, 0.85},
	} {
		got := classifyOne(t, b, builtinCall{upstream: c.upstream, target: c.target, tool: c.tool, desc: c.desc}).Axes[AxisBoundary]
		if got.Classified != c.want || got.Confidence != c.conf {
			t.Errorf("%s: got %s at %.2f (%s), want %s at %.2f", c.tool, got.Classified, got.Confidence, got.Source, c.want, c.conf)
		}
	}
}

// A URL among the arguments of an upstream whose zone the operator
// configured is data it is given (a chart repository), not where the call
// goes: the zone holds, below the high band. Unconfigured, the URL still
// speaks.
func TestConfiguredZoneOverArgumentURL(t *testing.T) {
	b := mustBuiltin(t, Options{Upstreams: map[string]UpstreamConfig{"k8s": {Zone: IntraOrg}}})
	call := builtinCall{upstream: "k8s", target: "stdio:kube-tools", tool: "helm_install", desc: "Install a Helm chart",
		args: `{"chart":"ingress-nginx","repoURL":"https://charts.example.com/stable"}`}
	if got := classifyOne(t, b, call).Axes[AxisBoundary]; got.Classified != IntraOrg || got.Confidence != 0.85 {
		t.Errorf("configured: got %s at %.2f (%s), want Intra-org at 0.85", got.Classified, got.Confidence, got.Source)
	}
	call.upstream = "other"
	if got := classifyOne(t, b, call).Axes[AxisBoundary]; got.Classified != External {
		t.Errorf("not configured: got %s at %.2f (%s), want External", got.Classified, got.Confidence, got.Source)
	}
}

// Resolving a comment, a thread or an incident closes it (Write);
// resolving a name or an id looks it up (Read).
func TestResolveClosesRecords(t *testing.T) {
	b := mustBuiltin(t, Options{})
	for tool, want := range map[string]string{
		"resolve_conversation": Write,
		"resolve_comment":      Write,
		"resolve_incident":     Write,
		"resolve_library_id":   Read,
		"resolve_hostname":     Read,
	} {
		got := classifyOne(t, b, builtinCall{target: "stdio:npx -y acme-widgets-mcp@1.0.0", tool: tool}).Axes[AxisActionType]
		if got.Classified != want {
			t.Errorf("%s: got %s (%.2f), want %s", tool, got.Classified, got.Confidence, want)
		}
	}
}

// Taking a message off a queue consumes it (Write); reading the queue's
// attributes or listing its messages does not.
func TestQueueReceiveConsumes(t *testing.T) {
	b := mustBuiltin(t, Options{})
	for tool, want := range map[string]string{
		"queue_get_message":      Write,
		"receive_queue_messages": Write,
		"get_queue_attributes":   Read,
		"list_queue_messages":    Read,
		"get_message":            Read,
	} {
		got := classifyOne(t, b, builtinCall{target: "stdio:npx -y acme-widgets-mcp@1.0.0", tool: tool}).Axes[AxisActionType]
		if got.Classified != want {
			t.Errorf("%s: got %s (%.2f), want %s", tool, got.Classified, got.Confidence, want)
		}
	}
}

// Converting or formatting something kept, named by reference, changes
// it; converting the text or data given computes (Read).
func TestInPlaceConversionWrites(t *testing.T) {
	b := mustBuiltin(t, Options{})
	for _, c := range []struct {
		tool, args, want string
	}{
		{"convert_to_frame", `{"nodeId":"12:34"}`, Write},
		{"format_range", `{"path":"/home/u/budget.xlsx","range":"A1:C9","styles":{"bold":true}}`, Write},
		{"convert_markdown", `{"markdown":"# Title\nbody"}`, Read},
		{"format_date", `{"date":"2026-11-27","pattern":"dd MMM"}`, Read},
	} {
		got := classifyOne(t, b, builtinCall{target: "stdio:npx -y acme-widgets-mcp@1.0.0", tool: c.tool, args: c.args}).Axes[AxisActionType]
		if got.Classified != c.want || got.Classified == Write && got.Confidence >= 0.9 {
			t.Errorf("%s %s: got %s (%.2f), want %s", c.tool, c.args, got.Classified, got.Confidence, c.want)
		}
	}
}

// Code or a command line run by a server that names no service runs on
// this host, unless it reaches another host (hosts inside shell commands
// decide).
func TestCodeRunsHere(t *testing.T) {
	b := mustBuiltin(t, Options{})
	const target = "stdio:npx -y acme-widgets-mcp@1.0.0"
	for _, c := range []struct {
		tool, args, want string
	}{
		{"run_code", `{"code":"print(sum(range(10)))","language":"python"}`, Local},
		{"execute_command", `{"command":"ls -la && wc -l notes.txt"}`, Local},
		{"execute_command", `{"command":"curl -s https://api.example.com/v1/x"}`, External},
		{"run_code", `{"code":"import requests; requests.get(u)"}`, External},
		{"get_discount", `{"discountCode":"SPRING25"}`, External},
	} {
		got := classifyOne(t, b, builtinCall{target: target, tool: c.tool, args: c.args}).Axes[AxisBoundary]
		if got.Classified != c.want {
			t.Errorf("%s %s: got %s (%.2f, %s), want %s", c.tool, c.args, got.Classified, got.Confidence, got.Source, c.want)
		}
	}
}

// A tool named for a shell runs its command line: the command's first
// word ("grep") is the payload, not the tool's operation.
func TestShellToolRunsItsCommand(t *testing.T) {
	b := mustBuiltin(t, Options{})
	for _, tool := range []string{"bash", "terminal", "powershell"} {
		got := classifyOne(t, b, builtinCall{target: "stdio:npx -y acme-widgets-mcp@1.0.0", tool: tool,
			desc: "Execute commands in the sandbox", args: `{"command":"grep -c ERROR app.log"}`}).Axes[AxisActionType]
		if got.Classified != Execute {
			t.Errorf("%s: got %s (%.2f, %s), want Execute", tool, got.Classified, got.Confidence, got.Source)
		}
	}
}

// A tool for the server's own help is about the server, whichever service
// it fronts; a help centre's articles are the service's.
func TestHelpToolIsTheServers(t *testing.T) {
	b := mustBuiltin(t, Options{})
	for tool, want := range map[string]string{"get_tool_help": Local, "help": Local, "get_help_article": External} {
		got := classifyOne(t, b, builtinCall{target: "stdio:npx -y slack-mcp-server@1.0.0", tool: tool}).Axes[AxisBoundary]
		if got.Classified != want {
			t.Errorf("%s: got %s (%.2f, %s), want %s", tool, got.Classified, got.Confidence, got.Source, want)
		}
	}
}

// A terminal multiplexer's panes and the clipboard are this host's.
func TestDescribesLocalPanesAndClipboard(t *testing.T) {
	for desc, want := range map[string]bool{
		"Delete an agent and its tmux pane":        true,
		"Read the current clipboard text":          true,
		"Upload the clipboard image to the bucket": false,
	} {
		if got := describesLocal(words(nil, desc)); got != want {
			t.Errorf("describesLocal(%q) = %v, want %v", desc, got, want)
		}
	}
}

// An app installed on or removed from a phone, a simulator or an emulator
// is that device's data (Write); installed into a workspace it is a
// capability (Provision).
func TestInstallOnDeviceWrites(t *testing.T) {
	b := mustBuiltin(t, Options{})
	for _, c := range []struct{ tool, desc, want string }{
		{"install_app", "Install an app on the mobile device", Write},
		{"uninstall_app", "Uninstall an app from the simulator", Write},
		{"install_app", "Install an app into the workspace", Provision},
	} {
		got := classifyOne(t, b, builtinCall{target: "stdio:npx -y acme-widgets-mcp@1.0.0", tool: c.tool, desc: c.desc}).Axes[AxisActionType]
		if got.Classified != c.want {
			t.Errorf("%s %q: got %s (%.2f), want %s", c.tool, c.desc, got.Classified, got.Confidence, c.want)
		}
	}
}
