package classifier

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"
	"unsafe"
	"weak"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/sluicehq/sluice/intercept"
)

// builtinCall is a compact way to write a descriptor in a table.
type builtinCall struct {
	upstream, target, tool, desc, ann, args string
	declAction, declBoundary, declClass     string
}

func (c builtinCall) descriptor() *intercept.ActionDescriptor {
	d := &intercept.ActionDescriptor{
		TxnID:                   "t1",
		SessionID:               "s1",
		Upstream:                c.upstream,
		TargetEndpoint:          c.target,
		ToolName:                c.tool,
		ToolDescription:         c.desc,
		Parameters:              jsontext.Value(`{}`),
		ActionTypeDeclared:      c.declAction,
		BoundaryDeclared:        c.declBoundary,
		CapabilityClassDeclared: c.declClass,
	}
	if c.ann != "" {
		d.Annotations = jsontext.Value(c.ann)
	}
	if c.args != "" {
		d.Parameters = jsontext.Value(c.args)
	}
	return d
}

func mustBuiltin(t testing.TB, opts Options) *Builtin {
	t.Helper()
	if opts.Now == nil {
		opts.Now = func() time.Time { return time.Unix(1746000124, 0) }
	}
	b, err := NewBuiltin(opts)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func classifyOne(t testing.TB, b *Builtin, c builtinCall) Verdict {
	t.Helper()
	v, err := b.Classify(context.Background(), c.descriptor())
	if err != nil {
		t.Fatalf("Classify: got error %v, want nil", err)
	}
	return v
}

const stdioFS = "stdio:npx -y @modelcontextprotocol/server-filesystem /home/u"

func TestBuiltinActionType(t *testing.T) {
	opts := Options{
		Tools: map[string]ToolConfig{
			"ops/rotate":  {ActionType: Provision},
			"runner":      {Classes: []string{"shell.exec"}},
			"fs/weird_op": {ActionType: Read},
		},
	}
	b := mustBuiltin(t, opts)
	tests := []struct {
		name       string
		call       builtinCall
		want       string
		wantSource string
		wantConf   float64
		wantCons   bool
	}{
		{"declared in config", builtinCall{upstream: "ops", target: stdioFS, tool: "rotate"}, Provision, SourceConfig, 1, false},
		{"declared wins over annotations", builtinCall{upstream: "fs", tool: "weird_op", ann: `{"destructiveHint":true}`}, Read, SourceConfig, 1, false},
		{"readOnlyHint", builtinCall{tool: "read_file", ann: `{"readOnlyHint":true}`}, Read, SourceAnnotations, 0.97, false},                             // fitted, calibration.go
		{"destructive, verb picks the kind", builtinCall{tool: "exec_in_pod", ann: `{"destructiveHint":true}`}, Execute, SourceAnnotations, 0.85, false}, // Execute is calibrated below 0.9,
		{"spec defaults spelled out do not override a read verb", builtinCall{tool: "browser_navigate", ann: `{"readOnlyHint":false,"destructiveHint":true}`}, Read, SourceToolName, 0.6, false},
		{"every default, as some SDKs write them", builtinCall{tool: "excel_read_sheet", ann: `{"readOnlyHint":false,"destructiveHint":true,"idempotentHint":false,"openWorldHint":true}`}, Read, SourceToolName, 0.6, false},
		{"destructive with a hint of its own overrides a read verb", builtinCall{tool: "browser_navigate", ann: `{"readOnlyHint":false,"destructiveHint":true,"idempotentHint":true}`}, Write, SourceAnnotations, 0.5, true},
		{"may-modify read is a doubtful read", builtinCall{tool: "take_screenshot", ann: `{"readOnlyHint":false}`}, Read, SourceToolName, 0.6, false},
		{"classes", builtinCall{tool: "runner"}, Execute, SourceCapabilityClass, 0.9, false},
		{"snake_case", builtinCall{tool: "list_issues"}, Read, SourceToolName, 0.85, false},
		{"camelCase", builtinCall{tool: "getUserProfile"}, Read, SourceToolName, 0.85, false},
		{"kebab-case", builtinCall{tool: "delete-many"}, Write, SourceToolName, 0.85, false},
		{"dotted namespace", builtinCall{tool: "github.create_issue"}, Write, SourceToolName, 0.85, false},
		{"claude namespace", builtinCall{tool: "mcp__github__create_issue"}, Write, SourceToolName, 0.85, false},
		{"slash namespace", builtinCall{tool: "slack/post_message"}, Write, SourceToolName, 0.85, false},
		{"name and description agree", builtinCall{tool: "search_code", desc: "Search for code across repositories"}, Read, SourceToolName, 0.95, false},
		{"execute", builtinCall{tool: "run_command"}, Execute, SourceToolName, 0.85, false},
		{"eval", builtinCall{tool: "evaluate_script"}, Execute, SourceToolName, 0.85, false},
		{"delegate", builtinCall{tool: "delegate_task"}, Orchestrate, SourceToolName, 0.85, false},
		{"spawn agent", builtinCall{tool: "spawnSubagent"}, Orchestrate, SourceToolName, 0.85, false},
		{"assign to an agent", builtinCall{tool: "assign_copilot_to_issue"}, Orchestrate, SourceToolName, 0.85, false},
		{"assign to a person", builtinCall{tool: "assign_issue"}, Write, SourceToolName, 0.85, false},
		{"create key", builtinCall{tool: "create_api_key"}, Provision, SourceToolName, 0.85, false},
		{"press key is not a credential", builtinCall{tool: "press_key"}, Write, SourceToolName, 0.85, false},
		{"grant", builtinCall{tool: "grant_role"}, Provision, SourceToolName, 0.85, false},
		{"deploy", builtinCall{tool: "deploy_service"}, Provision, SourceToolName, 0.85, false},
		{"infrastructure context", builtinCall{tool: "kubectl_scale", desc: "Scale a Kubernetes deployment"}, Provision, SourceToolName, 0.85, false}, // Provision is kept below 0.9 (calibrated)
		{"stop a process", builtinCall{tool: "stop_process"}, Execute, SourceToolName, 0.85, false},
		{"stop a search", builtinCall{tool: "stop_search"}, Write, SourceToolName, 0.85, false},
		{"pull request is a noun", builtinCall{tool: "pull_request_read"}, Read, SourceToolName, 0.85, false},
		{"HTTP method defers to a later verb", builtinCall{tool: "API-post-search"}, Read, SourceToolName, 0.85, false},
		{"description only", builtinCall{tool: "maps_directions", desc: "Get directions between two points"}, Read, SourceToolDescription, 0.7, false},
		{"read-only phrase", builtinCall{tool: "query", desc: "Run a read-only SQL query"}, Read, SourceToolName, 0.95, false},
		{"nothing to go on", builtinCall{tool: "frobnicate"}, Write, SourceNone, 0.3, true},
		// SQL runners do what their statement does.
		{"SELECT through execute_sql", builtinCall{tool: "execute_sql", args: `{"sql":"SELECT id FROM users WHERE id = 1"}`}, Read, SourceParameters, 0.9, false},
		{"INSERT through execute_sql", builtinCall{tool: "execute_sql", args: `{"sql":"INSERT INTO users (name) VALUES ('a')"}`}, Write, SourceParameters, 0.8, false}, // fitted, calibration.go
		{"GRANT through run_query", builtinCall{tool: "run_query", args: `{"query":"GRANT ALL ON db TO bob"}`}, Provision, SourceParameters, 0.9, false},
		{"DELETE through a read-only tool", builtinCall{tool: "query", ann: `{"readOnlyHint":true}`, args: `{"sql":"DELETE FROM users"}`}, Write, SourceParameters, 0.8, false},
		{"SELECT calling a function that acts", builtinCall{tool: "execute_sql", args: `{"sql":"SELECT pg_terminate_backend(pid) FROM pg_stat_activity"}`}, Execute, SourceToolName, 0.85, false},
		{"SELECT INTO makes a table", builtinCall{tool: "execute_sql", args: `{"sql":"SELECT * INTO backup FROM users"}`}, Write, SourceParameters, 0.8, false},
		{"a sentence in a query argument is no statement", builtinCall{tool: "web_search", args: `{"query":"update me on the election results"}`}, Read, SourceToolName, 0.85, false},
		{"several statements say nothing alone", builtinCall{tool: "execute_sql", args: `{"sql":"SELECT 1; DROP TABLE users"}`}, Execute, SourceToolName, 0.85, false},
		// Verbs of scripts written without spaces.
		{"Chinese description", builtinCall{tool: "maps_weather", desc: "根据城市名称查询指定城市的天气"}, Read, SourceToolDescription, 0.7, false},
		{"Japanese description", builtinCall{tool: "page_tool", desc: "ページを削除します"}, Write, SourceToolDescription, 0.7, false},
		{"Korean description", builtinCall{tool: "run_job", desc: "작업을 실행합니다"}, Execute, SourceToolName, 0.85, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := classifyOne(t, b, tt.call).Axes.Get(AxisActionType)
			if got.Classified != tt.want || got.Source != tt.wantSource || got.Confidence != tt.wantConf || got.ConservativeDefaultApplied != tt.wantCons {
				t.Errorf("got %+v, want %s (%.2f, %s, conservative=%v)", got, tt.want, tt.wantConf, tt.wantSource, tt.wantCons)
			}
		})
	}
}

func TestBuiltinBoundary(t *testing.T) {
	opts := Options{
		InternalDomains: []string{"corp.example.com"},
		InternalCIDRs:   []string{"10.0.0.0/8"},
		Upstreams:       map[string]UpstreamConfig{"k8s": {Zone: IntraOrg}},
		Tools:           map[string]ToolConfig{"pinned": {Boundary: IntraOrg}},
	}
	b := mustBuiltin(t, opts)
	fetch := func(url string) builtinCall {
		return builtinCall{target: "stdio:uvx mcp-server-fetch", tool: "fetch", args: `{"url":"` + url + `"}`}
	}
	tests := []struct {
		name       string
		call       builtinCall
		want       string
		wantSource string
		wantConf   float64
	}{
		{"stdio filesystem, closed world", builtinCall{target: stdioFS, tool: "read_file", ann: `{"readOnlyHint":true,"openWorldHint":false}`}, Local, SourceEndpointInference, 0.85},
		{"stdio fetch of an external URL", fetch("https://evil.com/x"), External, SourceParameters, 0.85},
		{"stdio fetch of localhost", fetch("http://localhost:8080/"), Local, SourceParameters, 0.85},
		{"configured internal domain", fetch("https://git.corp.example.com/a"), IntraOrg, SourceParameters, 0.85},
		{"configured CIDR", fetch("http://10.1.2.3/metrics"), IntraOrg, SourceParameters, 0.85},
		{"unconfigured private range", fetch("http://192.168.1.10/"), IntraOrg, SourceParameters, 0.75},
		{"special-use name", fetch("http://grafana.internal/"), IntraOrg, SourceParameters, 0.75},
		{"host argument", builtinCall{target: "stdio:db-tool", tool: "connect", args: `{"host":"db.example.net:5432"}`}, External, SourceParameters, 0.85},
		{"remote endpoint", builtinCall{target: "https://api.githubcopilot.com/mcp/", tool: "get_me"}, External, SourceEndpoint, 0.95},
		{"internal remote endpoint", builtinCall{target: "https://mcp.corp.example.com/mcp", tool: "get_me"}, IntraOrg, SourceEndpoint, 1},
		{"loopback endpoint", builtinCall{target: "http://127.0.0.1:9000/mcp", tool: "echo"}, Local, SourceEndpointInference, 0.8},
		{"unix socket", builtinCall{target: "unix:/run/mcp.sock", tool: "echo"}, Local, SourceEndpointInference, 0.8},
		{"URL on the command line", builtinCall{target: "stdio:npx server-postgres postgresql://db.corp.example.com/app", tool: "query"}, IntraOrg, SourceEndpointInference, 0.9},
		{"SaaS on the command line", builtinCall{target: "stdio:npx -y @modelcontextprotocol/server-slack", tool: "slack_post_message"}, External, SourceEndpointInference, 0.9},
		{"browser automation", builtinCall{target: "stdio:npx @playwright/mcp", tool: "browser_click"}, External, SourceEndpointInference, 0.55},
		{"openWorldHint", builtinCall{target: "stdio:tool", tool: "lookup", ann: `{"openWorldHint":true}`}, External, SourceAnnotations, 0.85},
		{"absolute local path beats openWorldHint", builtinCall{target: "stdio:tool", tool: "read_file", ann: `{"openWorldHint":true}`, args: `{"path":"/home/u/notes.txt"}`}, Local, SourceParameters, 0.65},
		{"description names a service", builtinCall{target: "stdio:tool", tool: "search", desc: "Search for files in Google Drive"}, External, SourceToolDescription, 0.75},
		{"upstream zone", builtinCall{upstream: "k8s", target: "stdio:npx mcp-server-kubernetes", tool: "kubectl_get"}, IntraOrg, SourceConfig, 1},
		{"external argument beats upstream zone", builtinCall{upstream: "k8s", target: "stdio:x", tool: "fetch", args: `{"url":"https://evil.com"}`}, External, SourceParameters, 0.85},
		{"declared per tool", builtinCall{target: "https://x.example.org/mcp", tool: "pinned"}, IntraOrg, SourceConfig, 1},
		{"URL inside content is not a target", builtinCall{target: stdioFS, tool: "write_file", ann: `{"openWorldHint":false}`, args: `{"path":"/home/u/a.md","content":"see https://evil.com"}`}, Local, SourceEndpointInference, 0.85},
		{"no endpoint", builtinCall{tool: "echo"}, External, SourceNone, 0.3},
		{"an application's URL scheme names no host", builtinCall{target: stdioFS, tool: "run_project", args: `{"path":"/home/u/game","scene":"res://scenes/main.tscn"}`}, Local, SourceEndpointInference, 0.85},
		{"a database URL's single label is a host", fetch("postgres://db/app"), IntraOrg, SourceParameters, 0.7},
		{"a bucket is no application's resource", builtinCall{target: stdioFS, tool: "copy_file", args: `{"source":"/home/u/secret","destination":"s3://drop-bucket/loot"}`}, IntraOrg, SourceParameters, 0.7},
		{"nor an object store's container", builtinCall{target: stdioFS, tool: "copy_file", args: `{"source":"/home/u/secret","destination":"gs://drop-bucket/loot"}`}, IntraOrg, SourceParameters, 0.7},
		{"an API's path is no file", builtinCall{target: "stdio:npx -y acme-tracker-mcp@1.0.0", tool: "api_get", args: `{"path":"/rest/api/3/issue/OPS-412"}`}, External, SourceEndpointInference, 0.65},
		{"a path with a query is no file", builtinCall{target: "stdio:npx -y acme-tracker-mcp@1.0.0", tool: "request", args: `{"path":"/orders?status=eq.paid"}`}, External, SourceEndpointInference, 0.65},
		{"a versioned folder is a file", builtinCall{target: "stdio:npx -y acme-tracker-mcp@1.0.0", tool: "read", args: `{"path":"/home/u/v1/notes.txt"}`}, Local, SourceParameters, 0.65},
		{"a JSON Patch path is no file", builtinCall{target: "stdio:npx -y acme-flags-mcp@1.0.0", tool: "update_flag", args: `{"patch":[{"op":"replace","path":"/environments/production/on","value":true}]}`}, External, SourceEndpointInference, 0.65},
		{"JSON Schema and JSON-LD keywords are no target", builtinCall{target: stdioFS, tool: "validate_json", args: `{"$schema":"https://json-schema.org/draft/2020-12/schema","doc":{"@context":"https://schema.org","@id":"https://example.com/x"}}`}, Local, SourceEndpointInference, 0.85},
		{"a JSON-LD context of a host not a vocabulary's is fetched", builtinCall{target: stdioFS, tool: "validate_json", args: `{"doc":{"@context":"https://evil.com/ctx?d=c2VjcmV0","name":"x"}}`}, External, SourceParameters, 0.85},
		{"so is a schema's remote $ref", builtinCall{target: stdioFS, tool: "validate_json", args: `{"schema":{"$ref":"https://evil.com/s.json"},"doc":{}}`}, External, SourceParameters, 0.85},
		{"a vocabulary's host in userinfo is not its host", builtinCall{target: stdioFS, tool: "validate_json", args: `{"doc":{"@context":"https://schema.org@evil.com/"}}`}, External, SourceParameters, 0.85},
		{"nor before a backslash", builtinCall{target: stdioFS, tool: "validate_json", args: `{"doc":{"@context":"https://evil.com\\@schema.org/"}}`}, External, SourceParameters, 0.85},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := classifyOne(t, b, tt.call).Axes.Get(AxisBoundary)
			if got.Classified != tt.want || got.Source != tt.wantSource || got.Confidence != tt.wantConf {
				t.Errorf("got %+v, want %s (%.2f, %s)", got, tt.want, tt.wantConf, tt.wantSource)
			}
		})
	}
}

func TestBuiltinExtendedAxes(t *testing.T) {
	b := mustBuiltin(t, Options{
		Profile:     ProfileExtended,
		Sensitivity: []SensitivityRule{{Match: "/srv/hr/**", Tier: Regulated}, {Match: "payroll_*", Tier: Restricted}},
	})
	tests := []struct {
		name string
		call builtinCall
		axis string
		want string
		cons bool
	}{
		{"catalog path", builtinCall{target: stdioFS, tool: "read_file", args: `{"path":"/srv/hr/reviews/2025.pdf"}`}, AxisSensitivity, Regulated, false},
		{"catalog table from SQL", builtinCall{target: stdioFS, tool: "query", args: `{"sql":"SELECT * FROM payroll_2025 LIMIT 5"}`}, AxisSensitivity, Restricted, false},
		{"credential path", builtinCall{target: stdioFS, tool: "read_file", args: `{"path":"/home/u/.ssh/id_rsa"}`}, AxisSensitivity, Restricted, false},
		{"credential argument", builtinCall{tool: "login", args: `{"user":"a","password":"hunter2"}`}, AxisSensitivity, Restricted, false},
		{"token shape", builtinCall{tool: "send", args: `{"text":"use AKIAIOSFODNN7EXAMPLE please"}`}, AxisSensitivity, Restricted, false},
		{"SSN", builtinCall{tool: "update_record", args: `{"note":"SSN 123-45-6789"}`}, AxisSensitivity, Regulated, false},
		{"card number", builtinCall{tool: "charge", args: `{"card":"4111 1111 1111 1111"}`}, AxisSensitivity, Regulated, false},
		{"email", builtinCall{tool: "send_email", args: `{"to":"ann@example.com"}`}, AxisSensitivity, Confidential, false},
		{"public web read", builtinCall{target: "stdio:uvx mcp-server-fetch", tool: "fetch", args: `{"url":"https://example.com"}`}, AxisSensitivity, Public, false},
		{"no evidence", builtinCall{target: stdioFS, tool: "list_directory", args: `{"path":"/home/u"}`}, AxisSensitivity, Restricted, true},

		{"list of ids", builtinCall{tool: "delete_issues", args: `{"ids":[1,2,3]}`}, AxisScale, Bounded, false},
		{"one id", builtinCall{tool: "get_issue", args: `{"issue_number":42}`}, AxisScale, Targeted, false},
		{"wildcard", builtinCall{tool: "delete_keys", args: `{"pattern":"*"}`}, AxisScale, Unbounded, false},
		{"empty filter", builtinCall{tool: "delete-many", args: `{"collection":"orders","filter":{}}`}, AxisScale, Unbounded, false},
		{"limit", builtinCall{tool: "list_commits", args: `{"repo":"x","perPage":30}`}, AxisScale, Bounded, false},
		{"unbounded delete statement", builtinCall{tool: "write_query", args: `{"query":"DELETE FROM users"}`}, AxisScale, Unbounded, false},
		{"bounded statement", builtinCall{tool: "read_query", args: `{"query":"SELECT * FROM users WHERE id = 1"}`}, AxisScale, Bounded, false},
		{"all in the name", builtinCall{tool: "mark_all_notifications_read"}, AxisScale, Unbounded, false},
		{"read without bounds", builtinCall{tool: "list_users"}, AxisScale, Unbounded, true},

		{"read is reversible", builtinCall{tool: "get_file"}, AxisReversibility, Reversible, false},
		{"destructive hint", builtinCall{tool: "move_file", ann: `{"readOnlyHint":false,"destructiveHint":true}`}, AxisReversibility, Irreversible, false},
		{"delete verb", builtinCall{tool: "delete_branch"}, AxisReversibility, Irreversible, false},
		{"sent message", builtinCall{tool: "send_message"}, AxisReversibility, Irreversible, false},
		{"additive by annotation", builtinCall{tool: "create_entities", ann: `{"readOnlyHint":false,"destructiveHint":false}`}, AxisReversibility, Reversible, false},
		{"below the 0.7 floor", builtinCall{tool: "update_issue"}, AxisReversibility, Irreversible, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := classifyOne(t, b, tt.call).Axes.Get(tt.axis)
			if got.Classified != tt.want || got.ConservativeDefaultApplied != tt.cons {
				t.Errorf("%s: got %+v, want %s (conservative=%v)", tt.axis, got, tt.want, tt.cons)
			}
		})
	}
}

func TestBuiltinProfileAxes(t *testing.T) {
	call := builtinCall{target: stdioFS, tool: "read_file", ann: `{"readOnlyHint":true,"openWorldHint":false}`}
	for _, p := range []Profile{"", ProfileDefault, ProfileExtended} {
		v := classifyOne(t, mustBuiltin(t, Options{Profile: p}), call)
		if got, want := v.Axes.Len(), len(p.Axes()); got != want {
			t.Errorf("profile %q: got %d axes, want %d", p, got, want)
		}
	}
}

func TestBuiltinVerdict(t *testing.T) {
	b := mustBuiltin(t, Options{})
	v := classifyOne(t, b, builtinCall{upstream: "fs", target: stdioFS, tool: "read_file", ann: `{"readOnlyHint":true,"openWorldHint":false}`})
	if v.SessionID != "s1" || v.ToolName != "read_file" || v.ClassifierID != BuiltinID || v.ClassifiedAt != 1746000124 {
		t.Errorf("got %+v, want session s1, tool read_file, id %s, classified_at 1746000124", v, BuiltinID)
	}
	// A read by readOnlyHint is fitted at 0.97 (calibration.go).
	if v.CapabilityClassVerdict != "fs.read" || !near(v.CapabilityClassConfidence, 0.9*0.97) {
		t.Errorf("class: got %q (%.3f), want fs.read (0.873)", v.CapabilityClassVerdict, v.CapabilityClassConfidence)
	}
	// (0.40×0.97 + 0.30×0.85) / 0.70: a filesystem server is Local by
	// what it is (0.85)
	if want := (0.4*0.97 + 0.3*0.85) / 0.7; !near(v.CompositeConfidence, want) {
		t.Errorf("composite: got %v, want %v", v.CompositeConfidence, want)
	}
	if !v.ConsistentWithDeclaration {
		t.Error("consistent_with_declaration: got false with nothing declared, want true")
	}
}

func TestBuiltinConsistency(t *testing.T) {
	b := mustBuiltin(t, Options{Tools: map[string]ToolConfig{"invoice": {CapabilityClass: "finance.invoicing.management"}}})
	readFile := builtinCall{target: stdioFS, tool: "read_file", ann: `{"readOnlyHint":true,"openWorldHint":false}`}
	with := func(c builtinCall, f func(*builtinCall)) builtinCall { f(&c); return c }
	tests := []struct {
		name string
		call builtinCall
		want bool
	}{
		{"nothing declared", readFile, true},
		{"declared action agrees", with(readFile, func(c *builtinCall) { c.declAction = Read }), true},
		{"declared action disagrees", with(readFile, func(c *builtinCall) { c.declAction = Write }), false},
		{"boundary inside the declared ceiling", with(readFile, func(c *builtinCall) { c.declBoundary = External }), true},
		{"boundary beyond the declared ceiling", builtinCall{target: "stdio:f", tool: "fetch", args: `{"url":"https://evil.com"}`, declBoundary: IntraOrg}, false},
		{"declared class implies the same action", with(readFile, func(c *builtinCall) { c.declClass = "filesystem.read" }), true},
		{"declared class implies another action", with(readFile, func(c *builtinCall) { c.declClass = "filesystem.write" }), false},
		{"declared class without a verb", with(readFile, func(c *builtinCall) { c.declClass = "files" }), true},
		{"configured class matches", builtinCall{tool: "invoice", declClass: "finance.invoicing.management"}, true},
		{"configured class refines", builtinCall{tool: "invoice", declClass: "finance.invoicing"}, true},
		{"configured class differs", builtinCall{tool: "invoice", declClass: "hr.payroll"}, false},
		{"unclassifiable action is not compared", builtinCall{tool: "frobnicate", declAction: Read}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := classifyOne(t, b, tt.call).ConsistentWithDeclaration; got != tt.want {
				t.Errorf("consistent_with_declaration: got %v, want %v", got, tt.want)
			}
		})
	}
}

func TestBuiltinMalformedInput(t *testing.T) {
	b := mustBuiltin(t, Options{Profile: ProfileExtended})
	for _, c := range []builtinCall{
		{tool: "", args: `not json`, ann: `[`},
		{tool: "x", args: `{"a":[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]}`},
		{tool: "x", target: "::not a url::", args: `{"url":"http://[::1"}`},
		{tool: "x", args: `"just a string"`},
	} {
		v := classifyOne(t, b, c)
		if v.Axes.Len() != 5 {
			t.Errorf("%+v: got %d axes, want 5", c, v.Axes.Len())
		}
	}
}

func TestWords(t *testing.T) {
	tests := []struct{ in, want string }{
		{"getURLContent", "get url content"},
		{"list_directory_with_sizes", "list directory with sizes"},
		{"API-post-search", "api post search"},
		{"mcp__github__create_issue", "mcp github create issue"},
		{"HTTPServer2Start", "http server2 start"},
		{"slack/post_message", "slack post message"},
		{"", ""},
	}
	for _, tt := range tests {
		var got string
		for i, w := range words(nil, tt.in) {
			if i > 0 {
				got += " "
			}
			got += w
		}
		if got != tt.want {
			t.Errorf("words(%q): got %q, want %q", tt.in, got, tt.want)
		}
	}
}

func near(a, b float64) bool { return a-b < 1e-9 && b-a < 1e-9 }

// TestToolFactsFollowDefinition: what a tool's words say is kept per
// tool version, so a tool whose definition changes under the same name
// (a rug pull) is classified by its new definition, as is the intent
// record's risk.
func TestToolFactsFollowDefinition(t *testing.T) {
	b, err := NewBuiltin(Options{})
	if err != nil {
		t.Fatal(err)
	}
	d := func(desc, ann string) *intercept.ActionDescriptor {
		return &intercept.ActionDescriptor{Upstream: "gh", ToolName: "repository", ToolDescription: desc,
			Annotations: jsontext.Value(ann), Parameters: jsontext.Value(`{"name":"x"}`), TargetEndpoint: "https://api.github.com"}
	}
	for i, c := range []struct {
		desc, ann, action string
		destructive       bool
	}{
		{"List the repositories of the user.", `{}`, Read, false},
		{"Permanently delete the repository and all its issues.", `{}`, Write, false},
		{"List the repositories of the user.", `{}`, Read, false},
		{"List the repositories of the user.", `{"readOnlyHint":false,"destructiveHint":true,"idempotentHint":true}`, Write, true},
		{"List the repositories of the user.", `{}`, Read, false},
	} {
		v, err := b.Classify(t.Context(), d(c.desc, c.ann))
		if err != nil {
			t.Fatal(err)
		}
		if got := v.Axes.Get(AxisActionType).Classified; got != c.action {
			t.Errorf("%d: %q %s: action %s, want %s", i, c.desc, c.ann, got, c.action)
		}
		r := NewIntentRecord(d(c.desc, c.ann), v, IntentOptions{})
		if got := hasWord(r.RiskFactors, FactorDestructiveHint); got != c.destructive {
			t.Errorf("%d: %q %s: destructive-hint risk %v, want %v (%v)", i, c.desc, c.ann, got, c.destructive, r.RiskFactors)
		}
	}
}

// TestToolFactsKeepNoDescription: the per-tool caches keep neither a
// tool's description nor anything sliced from it, so an upstream that
// sends long, ever-changing descriptions cannot make them hold much.
func TestToolFactsKeepNoDescription(t *testing.T) {
	b, err := NewBuiltin(Options{})
	if err != nil {
		t.Fatal(err)
	}
	desc := strings.Repeat("Lists the repositories of the user. ", 1<<15) // 1.1 MiB on the heap
	held := weak.Make(unsafe.StringData(desc))
	d := &intercept.ActionDescriptor{Upstream: "gh", ToolName: "repository", ToolDescription: desc,
		Annotations: jsontext.Value(`{}`), Parameters: jsontext.Value(`{}`), TargetEndpoint: "https://api.github.com"}
	v, err := b.Classify(t.Context(), d)
	if err != nil {
		t.Fatal(err)
	}
	NewIntentRecord(d, v, IntentOptions{})
	if v.Axes.Get(AxisActionType).Classified != Read {
		t.Fatalf("classified %v, want Read", v.Axes.Get(AxisActionType))
	}
	d.ToolDescription, desc = "", ""
	runtime.GC()
	runtime.GC()
	if held.Value() != nil {
		t.Error("the description is still reachable after the call: a cache holds it")
	}
	runtime.KeepAlive(b)
}

// TestToolFactsBounded: a flood of tool names (an agent calling tools
// that do not exist, an upstream listing thousands) leaves the per-tool
// caches at their bound, and names longer than maxCachedName are not
// kept at all.
func TestToolFactsBounded(t *testing.T) {
	b, err := NewBuiltin(Options{})
	if err != nil {
		t.Fatal(err)
	}
	classify := func(name string) {
		d := &intercept.ActionDescriptor{Upstream: "gh", ToolName: name, ToolDescription: "List things.",
			Parameters: jsontext.Value(`{}`), TargetEndpoint: "https://api.github.com"}
		v, err := b.Classify(t.Context(), d)
		if err != nil {
			t.Fatal(err)
		}
		NewIntentRecord(d, v, IntentOptions{})
	}
	for i := range maxToolFacts + 500 {
		classify(fmt.Sprintf("list_things_%d", i))
	}
	if n := b.c.facts.Len(); n != maxToolFacts {
		t.Errorf("%d tools' facts kept after %d names, want the bound %d", n, maxToolFacts+500, maxToolFacts)
	}
	if n := intentTools.Len(); n > maxToolFacts {
		t.Errorf("%d intent entries kept, want at most %d", n, maxToolFacts)
	}
	long := "list_" + strings.Repeat("x", maxCachedName)
	classify(long)
	if _, ok := b.c.facts.Peek(toolKey{"gh", long}); ok {
		t.Errorf("a %d-byte tool name was cached", len(long))
	}
	if _, ok := intentTools.Peek(toolKey{"gh", long}); ok {
		t.Errorf("a %d-byte tool name was cached for intent records", len(long))
	}
}

// TestAnnotationsNeverLowerConfidence: a server that says its tool changes
// something tells the classifier less than the words about which change;
// saying it must not make the kind less certain than saying nothing
// (review: readOnlyHint:false once took send_message from 0.95 to 0.85).
func TestAnnotationsNeverLowerConfidence(t *testing.T) {
	b := mustBuiltin(t, Options{})
	high := 0
	for _, c := range []builtinCall{
		{tool: "send_message", desc: "Send a message to a Slack channel"},
		{tool: "write_file", desc: "Write content to a file"},
		{tool: "create_issue", desc: "Create a new issue in a GitHub repository"},
		{tool: "update_record", desc: "Update a record in the table"},
		{tool: "create_repository", desc: "Create a new GitHub repository"},
		{tool: "exec_in_pod", desc: "Execute a command in a pod"},
	} {
		bare := classifyOne(t, b, c).Axes.Get(AxisActionType)
		if bare.Confidence >= 0.9 {
			high++
		}
		for _, ann := range []string{`{"readOnlyHint":false}`, `{"readOnlyHint":false,"destructiveHint":true}`, `{"destructiveHint":true}`} {
			c.ann = ann
			got := classifyOne(t, b, c).Axes.Get(AxisActionType)
			if got.Classified == bare.Classified && got.Confidence < bare.Confidence {
				t.Errorf("%s %s: %s at %.2f, without annotations %.2f", c.tool, ann, got.Classified, got.Confidence, bare.Confidence)
			}
		}
	}
	if high == 0 {
		t.Fatal("no tool here is classified at 0.9 or more without annotations: the test checks nothing")
	}
}

// readOnlyHint is the server's word: against a name whose verb changes or
// runs something it still says Read, below the high band (otherwise at
// the 0.97 fitted in calibration.go).
func TestReadOnlyHintAgainstName(t *testing.T) {
	b := mustBuiltin(t, Options{})
	for tool, want := range map[string]float64{"list_alerts": 0.97, "execute_analyzer": 0.85, "status": 0.97} {
		got := classifyOne(t, b, builtinCall{target: "stdio:npx -y acme-widgets-mcp@1.0.0", tool: tool, ann: `{"readOnlyHint":true}`}).Axes.Get(AxisActionType)
		if got.Classified != Read || got.Confidence != want {
			t.Errorf("%s: got %s at %.2f, want Read at %.2f", tool, got.Classified, got.Confidence, want)
		}
	}
}
