package gateway

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"strings"
	"sync/atomic"
	"time"

	mgomcp "github.com/mark3labs/mcp-go/mcp"
	mgoserver "github.com/mark3labs/mcp-go/server"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The transparency test's servers (TestTransparency): one on each SDK,
// offering the same tools, resources and prompts, so that one script can
// run against either. Nothing in them depends on time or on randomness,
// so that two runs of the script see the same messages.

// transparencyServerEnv, set in a test binary's environment, makes it the
// stdio server it names ("gosdk" or "mcpgo") instead of running tests.
const transparencyServerEnv = "SLUICE_TRANSPARENCY_SERVER"

// transparencyInstructions has an astral character and U+2028, which a
// JSON encoder may escape or not: a relay must not change which.
const transparencyInstructions = "Transparency server \U0001D11E snow \u2603, line\u2028separator"

// unicodeText is the unicode tool's answer.
const unicodeText = "astral \U0001F600 \U0001D11E, U+2028 [\u2028] U+2029 [\u2029] NEL [\u0085] <&> \"q\" \\ é"

// bigText is n MiB of text.
func bigText(n int) string {
	return strings.Repeat("0123456789abcdef", n<<16)
}

// ---- go-sdk ----

func goSDKServer() *mcp.Server {
	var rootsChanged atomic.Int64
	var s *mcp.Server
	s = mcp.NewServer(&mcp.Implementation{Name: "gosdk-transparency", Version: "1.0.0"}, &mcp.ServerOptions{
		Instructions: transparencyInstructions,
		PageSize:     3,
		CompletionHandler: func(_ context.Context, req *mcp.CompleteRequest) (*mcp.CompleteResult, error) {
			return &mcp.CompleteResult{Completion: mcp.CompletionResultDetails{Values: []string{req.Params.Argument.Value + "lice", req.Params.Argument.Value + "nne"}, Total: 2}}, nil
		},
		SubscribeHandler:        func(context.Context, *mcp.SubscribeRequest) error { return nil },
		UnsubscribeHandler:      func(context.Context, *mcp.UnsubscribeRequest) error { return nil },
		RootsListChangedHandler: func(context.Context, *mcp.RootsListChangedRequest) { rootsChanged.Add(1) },
	})
	text := func(s string) *mcp.CallToolResult {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
	}
	type echoIn struct {
		Text string `json:"text"`
	}
	mcp.AddTool(s, &mcp.Tool{Name: "echo", Description: "echoes text"}, func(_ context.Context, _ *mcp.CallToolRequest, in echoIn) (*mcp.CallToolResult, any, error) {
		return text("echo: " + in.Text), nil, nil
	})
	type weatherIn struct {
		City string `json:"city"`
	}
	type weatherOut struct {
		City string  `json:"city"`
		Temp float64 `json:"temp"`
	}
	mcp.AddTool(s, &mcp.Tool{Name: "weather", Description: "structured content with an output schema"}, func(_ context.Context, _ *mcp.CallToolRequest, in weatherIn) (*mcp.CallToolResult, weatherOut, error) {
		return nil, weatherOut{City: in.City, Temp: 21.5}, nil
	})
	type none struct{}
	mcp.AddTool(s, &mcp.Tool{Name: "fail", Description: "a tool error"}, func(context.Context, *mcp.CallToolRequest, none) (*mcp.CallToolResult, any, error) {
		r := text("it failed")
		r.IsError = true
		return r, nil, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "progress", Description: "three progress notifications"}, func(ctx context.Context, req *mcp.CallToolRequest, _ none) (*mcp.CallToolResult, any, error) {
		for i := 1; i <= 3; i++ {
			if err := req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: req.Params.GetProgressToken(), Progress: float64(i), Total: 3, Message: fmt.Sprintf("step %d \u2028", i)}); err != nil {
				return nil, nil, err
			}
		}
		return text("counted"), nil, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "slow", Description: "runs until cancelled"}, func(ctx context.Context, req *mcp.CallToolRequest, _ none) (*mcp.CallToolResult, any, error) {
		req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: req.Params.GetProgressToken(), Progress: 0, Message: "started"})
		select {
		case <-ctx.Done():
			return nil, nil, ctx.Err()
		case <-time.After(3 * time.Second):
			return text("not cancelled"), nil, nil
		}
	})
	type bigIn struct {
		MiB int `json:"mib"`
	}
	mcp.AddTool(s, &mcp.Tool{Name: "big", Description: "a large result"}, func(_ context.Context, _ *mcp.CallToolRequest, in bigIn) (*mcp.CallToolResult, any, error) {
		return text(bigText(in.MiB)), nil, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "unicode", Description: "unicode \U0001F600 \u2028"}, func(context.Context, *mcp.CallToolRequest, none) (*mcp.CallToolResult, any, error) {
		return text(unicodeText), nil, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "sample", Description: "asks the client to sample"}, func(ctx context.Context, req *mcp.CallToolRequest, _ none) (*mcp.CallToolResult, any, error) {
		r, err := req.Session.CreateMessage(ctx, &mcp.CreateMessageParams{MaxTokens: 10, Messages: []*mcp.SamplingMessage{{Role: "user", Content: &mcp.TextContent{Text: "say hi \U0001F600"}}}})
		if err != nil {
			return nil, nil, err
		}
		return text(fmt.Sprintf("sampled %s: %v", r.Model, r.Content)), nil, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "elicit", Description: "asks the user (form)"}, func(ctx context.Context, req *mcp.CallToolRequest, _ none) (*mcp.CallToolResult, any, error) {
		r, err := req.Session.Elicit(ctx, &mcp.ElicitParams{Message: "your name?", RequestedSchema: map[string]any{"type": "object", "properties": map[string]any{"name": map[string]any{"type": "string"}}}})
		if err != nil {
			return nil, nil, err
		}
		return text(fmt.Sprintf("elicited %s: %v", r.Action, r.Content)), nil, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "elicit_url", Description: "asks the user (URL)"}, func(ctx context.Context, req *mcp.CallToolRequest, _ none) (*mcp.CallToolResult, any, error) {
		r, err := req.Session.Elicit(ctx, &mcp.ElicitParams{Mode: "url", Message: "sign in", URL: "https://example.com/login?x=1", ElicitationID: "el-1"})
		if err != nil {
			return nil, nil, err
		}
		return text("elicited " + r.Action), nil, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "roots", Description: "lists the client's roots"}, func(ctx context.Context, req *mcp.CallToolRequest, _ none) (*mcp.CallToolResult, any, error) {
		r, err := req.Session.ListRoots(ctx, nil)
		if err != nil {
			return nil, nil, err
		}
		var b strings.Builder
		for _, rt := range r.Roots {
			b.WriteString(rt.URI + " ")
		}
		return text(fmt.Sprintf("roots %s(changed %d)", b.String(), rootsChanged.Load())), nil, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "log", Description: "logs at three levels"}, func(ctx context.Context, req *mcp.CallToolRequest, _ none) (*mcp.CallToolResult, any, error) {
		for _, l := range []mcp.LoggingLevel{"debug", "info", "error"} {
			if err := req.Session.Log(ctx, &mcp.LoggingMessageParams{Level: l, Logger: "t", Data: map[string]any{"level": string(l), "text": "\u2028\U0001F600"}}); err != nil {
				return nil, nil, err
			}
		}
		return text("logged"), nil, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "ping_client", Description: "pings the client"}, func(ctx context.Context, req *mcp.CallToolRequest, _ none) (*mcp.CallToolResult, any, error) {
		if err := req.Session.Ping(ctx, nil); err != nil {
			return nil, nil, err
		}
		return text("pinged"), nil, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "touch", Description: "updates a resource"}, func(ctx context.Context, _ *mcp.CallToolRequest, _ none) (*mcp.CallToolResult, any, error) {
		if err := s.ResourceUpdated(ctx, &mcp.ResourceUpdatedNotificationParams{URI: "test://static/a"}); err != nil {
			return nil, nil, err
		}
		return text("touched"), nil, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "add_tool", Description: "adds a tool"}, func(context.Context, *mcp.CallToolRequest, none) (*mcp.CallToolResult, any, error) {
		mcp.AddTool(s, &mcp.Tool{Name: "added", Description: "added at run time"}, func(context.Context, *mcp.CallToolRequest, none) (*mcp.CallToolResult, any, error) {
			return text("added"), nil, nil
		})
		return text("added a tool"), nil, nil
	})
	s.AddResource(&mcp.Resource{URI: "test://static/a", Name: "a", MIMEType: "text/plain"}, func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, MIMEType: "text/plain", Text: "resource a \U0001F600\u2028"}}}, nil
	})
	s.AddResource(&mcp.Resource{URI: "test://static/b", Name: "b", MIMEType: "application/octet-stream"}, func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, MIMEType: "application/octet-stream", Blob: []byte{0, 1, 2, 0xff}}}}, nil
	})
	s.AddResourceTemplate(&mcp.ResourceTemplate{URITemplate: "test://items/{id}", Name: "item"}, func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, MIMEType: "text/plain", Text: "item " + req.Params.URI}}}, nil
	})
	s.AddPrompt(&mcp.Prompt{Name: "greet", Description: "greets", Arguments: []*mcp.PromptArgument{{Name: "name", Required: true}}}, func(_ context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		return &mcp.GetPromptResult{Description: "a greeting", Messages: []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: "hello " + req.Params.Arguments["name"]}}}}, nil
	})
	return s
}

func goSDKHTTPHandler() http.Handler {
	s := goSDKServer()
	return mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil)
}

// ---- mcp-go ----

func mcpGoServer() *mgoserver.MCPServer {
	var rootsChanged atomic.Int64
	var s *mgoserver.MCPServer
	s = mgoserver.NewMCPServer("mcpgo-transparency", "1.0.0",
		mgoserver.WithInstructions(transparencyInstructions),
		mgoserver.WithPaginationLimit(3),
		mgoserver.WithToolCapabilities(true),
		mgoserver.WithResourceCapabilities(true, true),
		mgoserver.WithPromptCapabilities(true),
		mgoserver.WithLogging(),
		mgoserver.WithCompletions(),
		mgoserver.WithElicitation(),
		mgoserver.WithRoots(),
		mgoserver.WithPromptCompletionProvider(transparencyCompleter{}),
	)
	s.EnableSampling()
	s.AddNotificationHandler("notifications/roots/list_changed", func(context.Context, mgomcp.JSONRPCNotification) { rootsChanged.Add(1) })
	text := mgomcp.NewToolResultText
	s.AddTool(mgomcp.NewTool("echo", mgomcp.WithDescription("echoes text"), mgomcp.WithString("text")), func(_ context.Context, req mgomcp.CallToolRequest) (*mgomcp.CallToolResult, error) {
		return text("echo: " + req.GetString("text", "")), nil
	})
	s.AddTool(mgomcp.NewTool("weather", mgomcp.WithDescription("structured content with an output schema"), mgomcp.WithString("city"),
		mgomcp.WithOutputSchema[struct {
			City string  `json:"city"`
			Temp float64 `json:"temp"`
		}]()), func(_ context.Context, req mgomcp.CallToolRequest) (*mgomcp.CallToolResult, error) {
		out := map[string]any{"city": req.GetString("city", ""), "temp": 21.5}
		return mgomcp.NewToolResultStructuredOnly(out), nil
	})
	s.AddTool(mgomcp.NewTool("fail", mgomcp.WithDescription("a tool error")), func(context.Context, mgomcp.CallToolRequest) (*mgomcp.CallToolResult, error) {
		return mgomcp.NewToolResultError("it failed"), nil
	})
	progress := func(ctx context.Context, req mgomcp.CallToolRequest, p float64, total float64, msg string) {
		var tok mgomcp.ProgressToken
		if req.Params.Meta != nil {
			tok = req.Params.Meta.ProgressToken
		}
		if tok == nil {
			return
		}
		params := map[string]any{"progressToken": tok, "progress": p, "message": msg}
		if total > 0 {
			params["total"] = total
		}
		mgoserver.ServerFromContext(ctx).SendNotificationToClient(ctx, "notifications/progress", params)
	}
	s.AddTool(mgomcp.NewTool("progress", mgomcp.WithDescription("three progress notifications")), func(ctx context.Context, req mgomcp.CallToolRequest) (*mgomcp.CallToolResult, error) {
		for i := 1; i <= 3; i++ {
			progress(ctx, req, float64(i), 3, fmt.Sprintf("step %d \u2028", i))
		}
		return text("counted"), nil
	})
	s.AddTool(mgomcp.NewTool("slow", mgomcp.WithDescription("runs until cancelled")), func(ctx context.Context, req mgomcp.CallToolRequest) (*mgomcp.CallToolResult, error) {
		progress(ctx, req, 0, 0, "started")
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(3 * time.Second):
			return text("not cancelled"), nil
		}
	})
	s.AddTool(mgomcp.NewTool("big", mgomcp.WithDescription("a large result"), mgomcp.WithNumber("mib")), func(_ context.Context, req mgomcp.CallToolRequest) (*mgomcp.CallToolResult, error) {
		return text(bigText(req.GetInt("mib", 1))), nil
	})
	s.AddTool(mgomcp.NewTool("unicode", mgomcp.WithDescription("unicode \U0001F600 \u2028")), func(context.Context, mgomcp.CallToolRequest) (*mgomcp.CallToolResult, error) {
		return text(unicodeText), nil
	})
	s.AddTool(mgomcp.NewTool("sample", mgomcp.WithDescription("asks the client to sample")), func(ctx context.Context, _ mgomcp.CallToolRequest) (*mgomcp.CallToolResult, error) {
		r, err := s.RequestSampling(ctx, mgomcp.CreateMessageRequest{CreateMessageParams: mgomcp.CreateMessageParams{MaxTokens: 10,
			Messages: []mgomcp.SamplingMessage{{Role: mgomcp.RoleUser, Content: mgomcp.TextContent{Type: "text", Text: "say hi \U0001F600"}}}}})
		if err != nil {
			return nil, err
		}
		return text(fmt.Sprintf("sampled %s: %v", r.Model, r.Content)), nil
	})
	s.AddTool(mgomcp.NewTool("elicit", mgomcp.WithDescription("asks the user (form)")), func(ctx context.Context, _ mgomcp.CallToolRequest) (*mgomcp.CallToolResult, error) {
		r, err := s.RequestElicitation(ctx, mgomcp.ElicitationRequest{Params: mgomcp.ElicitationParams{Message: "your name?",
			RequestedSchema: map[string]any{"type": "object", "properties": map[string]any{"name": map[string]any{"type": "string"}}}}})
		if err != nil {
			return nil, err
		}
		return text(fmt.Sprintf("elicited %s: %v", r.Action, r.Content)), nil
	})
	s.AddTool(mgomcp.NewTool("elicit_url", mgomcp.WithDescription("asks the user (URL)")), func(ctx context.Context, _ mgomcp.CallToolRequest) (*mgomcp.CallToolResult, error) {
		r, err := s.RequestURLElicitation(ctx, mgoserver.ClientSessionFromContext(ctx), "el-1", "https://example.com/login?x=1", "sign in")
		if err != nil {
			return nil, err
		}
		return text(fmt.Sprintf("elicited %s", r.Action)), nil
	})
	s.AddTool(mgomcp.NewTool("roots", mgomcp.WithDescription("lists the client's roots")), func(ctx context.Context, _ mgomcp.CallToolRequest) (*mgomcp.CallToolResult, error) {
		r, err := s.RequestRoots(ctx, mgomcp.ListRootsRequest{})
		if err != nil {
			return nil, err
		}
		var b strings.Builder
		for _, rt := range r.Roots {
			b.WriteString(rt.URI + " ")
		}
		return text(fmt.Sprintf("roots %s(changed %d)", b.String(), rootsChanged.Load())), nil
	})
	s.AddTool(mgomcp.NewTool("log", mgomcp.WithDescription("logs at three levels")), func(ctx context.Context, _ mgomcp.CallToolRequest) (*mgomcp.CallToolResult, error) {
		for _, l := range []mgomcp.LoggingLevel{"debug", "info", "error"} {
			if err := s.SendLogMessageToClient(ctx, mgomcp.NewLoggingMessageNotification(l, "t", map[string]any{"level": string(l), "text": "\u2028\U0001F600"})); err != nil {
				return nil, err
			}
		}
		return text("logged"), nil
	})
	s.AddTool(mgomcp.NewTool("ping_client", mgomcp.WithDescription("pings the client")), func(context.Context, mgomcp.CallToolRequest) (*mgomcp.CallToolResult, error) {
		// mcp-go's server has no way to ping its client.
		return text("pinged"), nil
	})
	s.AddTool(mgomcp.NewTool("touch", mgomcp.WithDescription("updates a resource")), func(ctx context.Context, _ mgomcp.CallToolRequest) (*mgomcp.CallToolResult, error) {
		s.SendNotificationToAllClients("notifications/resources/updated", map[string]any{"uri": "test://static/a"})
		return text("touched"), nil
	})
	s.AddTool(mgomcp.NewTool("add_tool", mgomcp.WithDescription("adds a tool")), func(context.Context, mgomcp.CallToolRequest) (*mgomcp.CallToolResult, error) {
		s.AddTool(mgomcp.NewTool("added", mgomcp.WithDescription("added at run time")), func(context.Context, mgomcp.CallToolRequest) (*mgomcp.CallToolResult, error) {
			return text("added"), nil
		})
		return text("added a tool"), nil
	})
	s.AddResource(mgomcp.NewResource("test://static/a", "a", mgomcp.WithMIMEType("text/plain")), func(_ context.Context, req mgomcp.ReadResourceRequest) ([]mgomcp.ResourceContents, error) {
		return []mgomcp.ResourceContents{mgomcp.TextResourceContents{URI: req.Params.URI, MIMEType: "text/plain", Text: "resource a \U0001F600\u2028"}}, nil
	})
	s.AddResource(mgomcp.NewResource("test://static/b", "b", mgomcp.WithMIMEType("application/octet-stream")), func(_ context.Context, req mgomcp.ReadResourceRequest) ([]mgomcp.ResourceContents, error) {
		return []mgomcp.ResourceContents{mgomcp.BlobResourceContents{URI: req.Params.URI, MIMEType: "application/octet-stream", Blob: "AAEC/w=="}}, nil
	})
	s.AddResourceTemplate(mgomcp.NewResourceTemplate("test://items/{id}", "item"), func(_ context.Context, req mgomcp.ReadResourceRequest) ([]mgomcp.ResourceContents, error) {
		return []mgomcp.ResourceContents{mgomcp.TextResourceContents{URI: req.Params.URI, MIMEType: "text/plain", Text: "item " + req.Params.URI}}, nil
	})
	s.AddPrompt(mgomcp.NewPrompt("greet", mgomcp.WithPromptDescription("greets"), mgomcp.WithArgument("name", mgomcp.RequiredArgument())), func(_ context.Context, req mgomcp.GetPromptRequest) (*mgomcp.GetPromptResult, error) {
		return mgomcp.NewGetPromptResult("a greeting", []mgomcp.PromptMessage{mgomcp.NewPromptMessage(mgomcp.RoleUser, mgomcp.NewTextContent("hello "+req.Params.Arguments["name"]))}), nil
	})
	return s
}

type transparencyCompleter struct{}

func (transparencyCompleter) CompletePromptArgument(_ context.Context, _ string, arg mgomcp.CompleteArgument, _ mgomcp.CompleteContext) (*mgomcp.Completion, error) {
	return &mgomcp.Completion{Values: []string{arg.Value + "lice", arg.Value + "nne"}, Total: 2}, nil
}

func mcpGoHTTPHandler() http.Handler {
	return mgoserver.NewStreamableHTTPServer(mcpGoServer())
}

// runTransparencyServer serves the named server on stdio until stdin ends.
func runTransparencyServer(name string) int {
	var err error
	switch name {
	case "gosdk":
		err = goSDKServer().Run(context.Background(), &mcp.StdioTransport{})
	case "mcpgo":
		err = mgoserver.ServeStdio(mcpGoServer())
	case "upcalls":
		err = mgoserver.ServeStdio(upcallServer())
	case "progress":
		err = serveProgress(os.Stdin, os.Stdout)
	default:
		err = fmt.Errorf("no server %q", name)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}
