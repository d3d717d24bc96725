package classifier

import "testing"

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
		got := classifyOne(t, b, builtinCall{target: target, tool: c.tool, desc: c.desc, ann: c.ann}).Axes.Get(AxisActionType)
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
		got := classifyOne(t, b, builtinCall{target: target, tool: c.tool, desc: c.desc}).Axes.Get(AxisActionType)
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
		got := classifyOne(t, b, builtinCall{upstream: c.upstream, target: c.target, tool: c.tool, desc: c.desc}).Axes.Get(AxisBoundary)
		if got.Classified != c.want || got.Confidence != c.conf {
			t.Errorf("%s: got %s at %.2f (%s), want %s at %.2f", c.tool, got.Classified, got.Confidence, got.Source, c.want, c.conf)
		}
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
		got := classifyOne(t, b, builtinCall{target: "stdio:npx -y acme-widgets-mcp@1.0.0", tool: tool}).Axes.Get(AxisActionType)
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
		got := classifyOne(t, b, builtinCall{target: "stdio:npx -y acme-widgets-mcp@1.0.0", tool: tool}).Axes.Get(AxisActionType)
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
		got := classifyOne(t, b, builtinCall{target: "stdio:npx -y acme-widgets-mcp@1.0.0", tool: c.tool, args: c.args}).Axes.Get(AxisActionType)
		if got.Classified != c.want || got.Classified == Write && got.Confidence >= 0.9 {
			t.Errorf("%s %s: got %s (%.2f), want %s", c.tool, c.args, got.Classified, got.Confidence, c.want)
		}
	}
}

// A tool named for a shell runs its command line: the command's first
// word ("grep") is the payload, not the tool's operation.
func TestShellToolRunsItsCommand(t *testing.T) {
	b := mustBuiltin(t, Options{})
	for _, tool := range []string{"bash", "terminal", "powershell"} {
		got := classifyOne(t, b, builtinCall{target: "stdio:npx -y acme-widgets-mcp@1.0.0", tool: tool,
			desc: "Execute commands in the sandbox", args: `{"command":"grep -c ERROR app.log"}`}).Axes.Get(AxisActionType)
		if got.Classified != Execute {
			t.Errorf("%s: got %s (%.2f, %s), want Execute", tool, got.Classified, got.Confidence, got.Source)
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
		got := classifyOne(t, b, builtinCall{target: "stdio:npx -y acme-widgets-mcp@1.0.0", tool: c.tool, desc: c.desc}).Axes.Get(AxisActionType)
		if got.Classified != c.want {
			t.Errorf("%s %q: got %s (%.2f), want %s", c.tool, c.desc, got.Classified, got.Confidence, c.want)
		}
	}
}
