package mcptools

import (
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
)

func TestRenderShowsTextAndSummarisesTheRest(t *testing.T) {
	size := int64(2048)
	cases := []struct {
		name string
		res  *mcp.CallToolResult
		want string
	}{
		{"text parts", &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "a"}, &mcp.TextContent{Text: "b"}}}, "a\nb"},
		{"empty", &mcp.CallToolResult{}, ""},
		{"image", &mcp.CallToolResult{Content: []mcp.Content{&mcp.ImageContent{MIMEType: "image/png", Data: make([]byte, 10)}}}, "[image image/png, 10 bytes]"},
		{"audio without type", &mcp.CallToolResult{Content: []mcp.Content{&mcp.AudioContent{Data: []byte{1}}}}, "[audio unknown type, 1 byte]"},
		{"resource link", &mcp.CallToolResult{Content: []mcp.Content{&mcp.ResourceLink{URI: "file:///a.pdf", Name: "a", MIMEType: "application/pdf", Size: &size}}},
			`[resource link file:///a.pdf "a", application/pdf, 2048 bytes]`},
		{"text resource", &mcp.CallToolResult{Content: []mcp.Content{&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: "file:///n.txt", Text: "notes"}}}},
			"[resource file:///n.txt]\nnotes"},
		{"blob resource", &mcp.CallToolResult{Content: []mcp.Content{&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: "file:///b", MIMEType: "application/zip", Blob: make([]byte, 3)}}}},
			"[resource file:///b, application/zip, 3 bytes]"},
		{"structured only", &mcp.CallToolResult{StructuredContent: map[string]any{"sum": 3}}, `{"sum":3}`},
		{"text wins over structured", &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "3"}}, StructuredContent: map[string]any{"sum": 3}}, "3"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, render(tc.res))
		})
	}
}
