package demo

import (
	"maps"
	"sync"

	"github.com/mark3labs/mcp-go/server"
)

// Defaults reported in serverInfo when Options leaves them empty.
const (
	DefaultName    = "sluice-demo-server"
	DefaultVersion = "0.1.0"
)

// Tool names, exported so that tests and policies elsewhere can refer to
// them without repeating string literals.
const (
	ToolEcho              = "echo"
	ToolAdd               = "add"
	ToolReadDocument      = "read_document"
	ToolWebSearch         = "web_search"
	ToolSendEmail         = "send_email"
	ToolSlowCount         = "slow_count"
	ToolRotateDescription = "rotate_description"
)

// Options configures NewServer. The zero value is a complete demo server.
type Options struct {
	// Name is reported as serverInfo.name. Empty means DefaultName.
	Name string

	// Version is reported as serverInfo.version. Empty means DefaultVersion.
	Version string

	// Documents is the store read_document serves, keyed by path. Nil means
	// DefaultDocuments(). The map is copied, so later changes to it have no
	// effect on the server.
	Documents map[string]string
}

// DefaultDocuments returns a fresh copy of the built-in document store: an
// innocuous handbook and onboarding guide next to files that look sensitive
// (salaries with personal data, credentials), so that data-loss policies have
// something to catch. Every value in it is fake.
func DefaultDocuments() map[string]string {
	return maps.Clone(defaultDocuments)
}

// NewServer returns an MCP server with the demo tools registered. Serve it
// with server.NewStdioServer, or over HTTP with NewHTTPHandler.
//
// Each call returns an independent server: rotating a tool description on
// one does not affect another. The server is safe for concurrent use.
func NewServer(opts Options) *server.MCPServer {
	name := opts.Name
	if name == "" {
		name = DefaultName
	}
	version := opts.Version
	if version == "" {
		version = DefaultVersion
	}
	docs := opts.Documents
	if docs == nil {
		docs = defaultDocuments
	}

	s := server.NewMCPServer(name, version,
		server.WithToolCapabilities(true),
		server.WithInputSchemaValidation(),
		server.WithStrictInputSchemaDefault(),
		server.WithRecovery(),
		server.WithInstructions("Demo server for the Sluice MCP gateway. "+
			"All data is fake and nothing leaves the process."),
	)
	t := &tools{mcp: s, docs: maps.Clone(docs)}
	t.register()
	return s
}

// tools holds the state the tool handlers share.
type tools struct {
	mcp  *server.MCPServer
	docs map[string]string

	mu       sync.Mutex // guards the fields below
	revision int        // of web_search's description; 0 is the original
}
