package mcp_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/vigil-run/vigil/agentloop"
	"github.com/vigil-run/vigil/bus"
	"github.com/vigil-run/vigil/plugins/tools/mcp"
	"github.com/vigil-run/vigil/plugins/tools/mcp/internal/testserver"
)

// Mount an MCP server reached over streamable HTTP and call one of its
// tools through the tool service the plugin provides. In plugins.yaml the
// same is an entry named tools/mcp with this config; a server run as a
// subprocess takes command (and args, env) instead of url.
func Example() {
	srv := testserver.New(testserver.Options{})
	ts := httptest.NewServer(mcpsdk.NewStreamableHTTPHandler(func(*http.Request) *mcpsdk.Server { return srv }, nil))
	defer ts.Close()
	root := bus.New()
	defer root.Dispose() // before the server closes: deferred calls run last first

	_, err := root.Context().Plugin(mcp.Plugin, &mcp.Config{
		URL:     ts.URL,
		Include: []string{"echo", "getenv"},
		Prefix:  "demo_",
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	tools, _ := bus.Lookup[agentloop.Tool](root.Context(), agentloop.ToolServicePrefix)
	for _, t := range tools {
		fmt.Println(t.Name, "-", t.Value.Spec().Description)
	}
	out, err := tools[0].Value.Execute(context.Background(), []byte(`{"text":"hi"}`))
	fmt.Println(out, err)
	// Output:
	// tool/demo_echo - Echo the text back.
	// tool/demo_getenv - Read an environment variable of the server.
	// echo: hi <nil>
}
