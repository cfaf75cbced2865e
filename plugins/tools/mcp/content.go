package mcp

import (
	"encoding/json"
	"fmt"
	"strings"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// render is the text the model sees for a tool result: text content as
// it is, other content summarised by type and size (the model cannot
// use bytes it is shown as text), parts separated by a newline. A result
// with no content shows its structured content as JSON.
func render(res *mcpsdk.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		parts = append(parts, renderContent(c))
	}
	if len(parts) == 0 && res.StructuredContent != nil {
		if b, err := json.Marshal(res.StructuredContent); err == nil {
			return string(b)
		}
	}
	return strings.Join(parts, "\n")
}

func renderContent(c mcpsdk.Content) string {
	switch c := c.(type) {
	case *mcpsdk.TextContent:
		return c.Text
	case *mcpsdk.ImageContent:
		return fmt.Sprintf("[image %s, %s]", orUnknown(c.MIMEType), size(len(c.Data)))
	case *mcpsdk.AudioContent:
		return fmt.Sprintf("[audio %s, %s]", orUnknown(c.MIMEType), size(len(c.Data)))
	case *mcpsdk.ResourceLink:
		var b strings.Builder
		fmt.Fprintf(&b, "[resource link %s", c.URI)
		if c.Name != "" {
			fmt.Fprintf(&b, " %q", c.Name)
		}
		if c.MIMEType != "" {
			b.WriteString(", " + c.MIMEType)
		}
		if c.Size != nil {
			b.WriteString(", " + size(int(*c.Size)))
		}
		b.WriteString("]")
		return b.String()
	case *mcpsdk.EmbeddedResource:
		r := c.Resource
		switch {
		case r == nil:
			return "[resource]"
		case r.Blob != nil:
			return fmt.Sprintf("[resource %s, %s, %s]", r.URI, orUnknown(r.MIMEType), size(len(r.Blob)))
		default:
			// A text resource is text: the model gets it, under its URI.
			return fmt.Sprintf("[resource %s]\n%s", r.URI, r.Text)
		}
	}
	// Content types newer than this code: name the type from the wire.
	b, err := c.MarshalJSON()
	if err != nil {
		return "[content]"
	}
	var head struct {
		Type string `json:"type"`
	}
	_ = json.Unmarshal(b, &head)
	return fmt.Sprintf("[%s content, %s]", orUnknown(head.Type), size(len(b)))
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown type"
	}
	return s
}

func size(n int) string {
	if n == 1 {
		return "1 byte"
	}
	return fmt.Sprintf("%d bytes", n)
}
