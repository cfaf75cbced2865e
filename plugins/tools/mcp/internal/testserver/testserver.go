// Package testserver is a small MCP server, written with the official Go
// SDK, that the tools/mcp tests talk to: in process over HTTP, and as the
// mcpserver command over stdio.
package testserver

//lint:file-ignore SA1019 MCP roots are deprecated by SEP-2577 but remain what servers read during the deprecation window (issue 33 item 11).

import (
	"context"
	"errors"
	"os"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// MetaIdempotencyKey is where Vigil puts a call's idempotency key in
// its _meta (the tools/mcp package's constant; a test server does not
// import the client).
const MetaIdempotencyKey = "vigil/idempotency-key"

// ImageSize is the size of the image the image tool returns.
const ImageSize = 1234

// Options are the server's hooks.
type Options struct {
	// Hanging, when set, is called when a call of the hang tool starts.
	Hanging func()
}

type (
	echoIn struct {
		Text string `json:"text" jsonschema:"what to echo"`
	}
	failIn struct {
		Message string `json:"message" jsonschema:"the error to report"`
	}
	nameIn struct {
		Name string `json:"name" jsonschema:"a tool or variable name"`
	}
	none struct{}
)

func text(s string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
}

// New returns the server. Its tools:
//
//   - echo {text}: "echo: <text>" (annotated read-only)
//   - key {}: the call's _meta[MetaIdempotencyKey] (annotated idempotent)
//   - fail {message}: an error result with message
//   - hang {}: blocks until the call is cancelled
//   - image {}: a text part and a PNG of ImageSize bytes
//   - getenv {name}: the server process's environment variable name
//   - getwd {}: the server process's working directory
//   - roots {}: whether the client advertised roots ("roots capability",
//     "no roots capability")
//   - add_tool {name}: adds a tool name that answers "<name> works"
//   - remove_tool {name}: removes the tool name
//
// add_tool and remove_tool answer only after the server has sent the
// notifications/tools/list_changed that follows their change: the
// announcement comes before the result, as a server that changes its
// tools in a call would send it.
//   - admin_reset {}: a tool tests exclude by pattern
func New(opts Options) *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "vigil-testserver", Version: "1"}, nil)
	ann := &announcements{tick: make(chan struct{})}
	s.AddSendingMiddleware(ann.middleware)
	mcp.AddTool(s, &mcp.Tool{Name: "echo", Description: "Echo the text back.", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(_ context.Context, _ *mcp.CallToolRequest, in echoIn) (*mcp.CallToolResult, any, error) {
			return text("echo: " + in.Text), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "key", Description: "Return the call's idempotency key.", Annotations: &mcp.ToolAnnotations{IdempotentHint: true}},
		func(_ context.Context, req *mcp.CallToolRequest, _ none) (*mcp.CallToolResult, any, error) {
			k, _ := req.Params.Meta[MetaIdempotencyKey].(string)
			return text(k), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "fail", Description: "Report an error."},
		func(_ context.Context, _ *mcp.CallToolRequest, in failIn) (*mcp.CallToolResult, any, error) {
			return nil, nil, errors.New(in.Message)
		})
	mcp.AddTool(s, &mcp.Tool{Name: "hang", Description: "Never answer."},
		func(ctx context.Context, _ *mcp.CallToolRequest, _ none) (*mcp.CallToolResult, any, error) {
			if opts.Hanging != nil {
				opts.Hanging()
			}
			<-ctx.Done()
			return nil, nil, ctx.Err()
		})
	mcp.AddTool(s, &mcp.Tool{Name: "image", Description: "Draw a picture."},
		func(context.Context, *mcp.CallToolRequest, none) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{
				&mcp.TextContent{Text: "a picture:"},
				&mcp.ImageContent{MIMEType: "image/png", Data: make([]byte, ImageSize)},
			}}, nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "getenv", Description: "Read an environment variable of the server."},
		func(_ context.Context, _ *mcp.CallToolRequest, in nameIn) (*mcp.CallToolResult, any, error) {
			return text(os.Getenv(in.Name)), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "roots", Description: "Say whether the client advertised roots."},
		func(_ context.Context, req *mcp.CallToolRequest, _ none) (*mcp.CallToolResult, any, error) {
			if req.Session.InitializeParams().Capabilities.RootsV2 == nil {
				return text("no roots capability"), nil, nil
			}
			return text("roots capability"), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "getwd", Description: "Print the server's working directory."},
		func(context.Context, *mcp.CallToolRequest, none) (*mcp.CallToolResult, any, error) {
			wd, err := os.Getwd()
			if err != nil {
				return nil, nil, err
			}
			return text(wd), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "add_tool", Description: "Add a tool."},
		func(ctx context.Context, _ *mcp.CallToolRequest, in nameIn) (*mcp.CallToolResult, any, error) {
			if err := ann.after(ctx, func() { Add(s, in.Name) }); err != nil {
				return nil, nil, err
			}
			return text("added " + in.Name), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "remove_tool", Description: "Remove a tool."},
		func(ctx context.Context, _ *mcp.CallToolRequest, in nameIn) (*mcp.CallToolResult, any, error) {
			if err := ann.after(ctx, func() { s.RemoveTools(in.Name) }); err != nil {
				return nil, nil, err
			}
			return text("removed " + in.Name), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "admin_reset", Description: "Reset everything."},
		func(context.Context, *mcp.CallToolRequest, none) (*mcp.CallToolResult, any, error) {
			return text("reset"), nil, nil
		})
	return s
}

// announcements numbers the tools/list_changed notifications the server
// sends, in the order they begin.
type announcements struct {
	mu      sync.Mutex
	started int           // notifications begun
	sent    int           // the highest number of a notification sent
	tick    chan struct{} // closed and replaced when sent grows
}

func (a *announcements) middleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if method != "notifications/tools/list_changed" {
			return next(ctx, method, req)
		}
		a.mu.Lock()
		a.started++
		n := a.started
		a.mu.Unlock()
		res, err := next(ctx, method, req)
		a.mu.Lock()
		if n > a.sent {
			a.sent = n
			close(a.tick)
			a.tick = make(chan struct{})
		}
		a.mu.Unlock()
		return res, err
	}
}

// after runs change, then waits until a notification begun after the
// change started has been sent. The server debounces its notifications,
// so that one is the change's own (or carries it), however late this
// goroutine gets to look.
func (a *announcements) after(ctx context.Context, change func()) error {
	a.mu.Lock()
	before := a.started
	a.mu.Unlock()
	change()
	a.mu.Lock()
	for a.sent <= before {
		tick := a.tick
		a.mu.Unlock()
		select {
		case <-tick:
		case <-ctx.Done():
			return ctx.Err()
		}
		a.mu.Lock()
	}
	a.mu.Unlock()
	return nil
}

// Add adds a tool called name to s that answers "<name> works".
func Add(s *mcp.Server, name string) {
	mcp.AddTool(s, &mcp.Tool{Name: name, Description: "Added at runtime."},
		func(context.Context, *mcp.CallToolRequest, none) (*mcp.CallToolResult, any, error) {
			return text(name + " works"), nil, nil
		})
}
