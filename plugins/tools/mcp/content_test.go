package mcp

import (
	"testing"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
)

func TestRenderShowsTextAndSummarisesTheRest(t *testing.T) {
	size := int64(2048)
	cases := []struct {
		name string
		res  *mcpsdk.CallToolResult
		want string
	}{
		{"text parts", &mcpsdk.CallToolResult{Content: []mcpsdk.Content{&mcpsdk.TextContent{Text: "a"}, &mcpsdk.TextContent{Text: "b"}}}, "a\nb"},
		{"empty", &mcpsdk.CallToolResult{}, ""},
		{"image", &mcpsdk.CallToolResult{Content: []mcpsdk.Content{&mcpsdk.ImageContent{MIMEType: "image/png", Data: make([]byte, 10)}}}, "[image image/png, 10 bytes]"},
		{"audio without type", &mcpsdk.CallToolResult{Content: []mcpsdk.Content{&mcpsdk.AudioContent{Data: []byte{1}}}}, "[audio unknown type, 1 byte]"},
		{"resource link", &mcpsdk.CallToolResult{Content: []mcpsdk.Content{&mcpsdk.ResourceLink{URI: "file:///a.pdf", Name: "a", MIMEType: "application/pdf", Size: &size}}},
			`[resource link file:///a.pdf "a", application/pdf, 2048 bytes]`},
		{"text resource", &mcpsdk.CallToolResult{Content: []mcpsdk.Content{&mcpsdk.EmbeddedResource{Resource: &mcpsdk.ResourceContents{URI: "file:///n.txt", Text: "notes"}}}},
			"[resource file:///n.txt]\nnotes"},
		{"blob resource", &mcpsdk.CallToolResult{Content: []mcpsdk.Content{&mcpsdk.EmbeddedResource{Resource: &mcpsdk.ResourceContents{URI: "file:///b", MIMEType: "application/zip", Blob: make([]byte, 3)}}}},
			"[resource file:///b, application/zip, 3 bytes]"},
		{"structured only", &mcpsdk.CallToolResult{StructuredContent: map[string]any{"sum": 3}}, `{"sum":3}`},
		{"text wins over structured", &mcpsdk.CallToolResult{Content: []mcpsdk.Content{&mcpsdk.TextContent{Text: "3"}}, StructuredContent: map[string]any{"sum": 3}}, "3"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, render(tc.res))
		})
	}
}
