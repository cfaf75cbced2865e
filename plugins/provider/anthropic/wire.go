package anthropic

import (
	"encoding/json"

	"github.com/vigil-run/vigil/plugins/internal/eventstream"
)

// The wire types of the one endpoint Vigil uses, messages with
// streaming: exactly the fields it sends and reads. Fields are in the
// order the official SDK sends them, so a request is the same JSON text
// the SDK would send (oracle_test.go holds it to that).

// messagesRequest is the body of POST v1/messages.
type messagesRequest struct {
	MaxTokens     int64         `json:"max_tokens"`
	Messages      []turn        `json:"messages,omitempty"`
	Model         string        `json:"model,omitempty"`
	OutputConfig  *outputConfig `json:"output_config,omitempty"`
	StopSequences []string      `json:"stop_sequences,omitempty"`
	System        []textBlock   `json:"system,omitempty"`
	Tools         []tool        `json:"tools,omitempty"`
	// Temperature is no field of the SDK's (the API deprecates it): it
	// sends it as an extra field, after its own.
	Temperature *float64 `json:"temperature,omitempty"`
	Stream      bool     `json:"stream"`
}

// turn is a message: a user or assistant turn of content blocks.
type turn struct {
	Content []contentParam `json:"content"`
	Role    string         `json:"role"`
}

// contentParam is a textBlock, toolUseBlock or toolResultBlock.
type contentParam any

type textBlock struct {
	Text string `json:"text"`
	Type string `json:"type"`
}

type toolUseBlock struct {
	ID    string          `json:"id"`
	Input json.RawMessage `json:"input"`
	Name  string          `json:"name"`
	Type  string          `json:"type"`
}

type toolResultBlock struct {
	ToolUseID string      `json:"tool_use_id"`
	Content   []textBlock `json:"content,omitempty"`
	Type      string      `json:"type"`
}

func text(s string) textBlock { return textBlock{Text: s, Type: "text"} }

// tool is a tool definition with its input schema kept as the exact JSON
// Schema text the tool declared.
type tool struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	InputSchema json.RawMessage `json:"input_schema"`
}

// outputConfig is structured output: output_config.format with its
// schema kept as the exact JSON Schema text of the request header.
type outputConfig struct {
	Format outputFormat `json:"format"`
}

type outputFormat struct {
	Type   string          `json:"type"`
	Schema json.RawMessage `json:"schema"`
}

// event is one event of the stream, of any type; each type uses its own
// fields. They are read as the SDK reads them (see eventstream.String,
// Int, Object): a value of another JSON type than the API's is taken as
// the SDK takes it.
type event struct {
	Type         eventstream.String               `json:"type"`
	Message      eventstream.Object[startMessage] `json:"message"`
	Index        eventstream.Int                  `json:"index"`
	ContentBlock eventstream.Object[contentBlock] `json:"content_block"`
	Delta        eventstream.Object[eventDelta]   `json:"delta"`
	Usage        eventstream.Object[deltaUsage]   `json:"usage"`
}

type startMessage struct {
	Usage eventstream.Object[startUsage] `json:"usage"`
}

type startUsage struct {
	InputTokens              eventstream.Int `json:"input_tokens"`
	CacheCreationInputTokens eventstream.Int `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     eventstream.Int `json:"cache_read_input_tokens"`
	OutputTokens             eventstream.Int `json:"output_tokens"`
}

// deltaUsage is message_delta's cumulative usage; a count the server did
// not send is not Set.
type deltaUsage = startUsage

// contentBlock opens a block; Input is the tool_use input as sent.
type contentBlock struct {
	Type     eventstream.String `json:"type"`
	Text     eventstream.String `json:"text"`
	Thinking eventstream.String `json:"thinking"`
	ID       eventstream.String `json:"id"`
	Name     eventstream.String `json:"name"`
	Input    json.RawMessage    `json:"input"`
}

// eventDelta is a content block's delta or message_delta's delta.
type eventDelta struct {
	Type        eventstream.String `json:"type"`
	Text        eventstream.String `json:"text"`
	Thinking    eventstream.String `json:"thinking"`
	PartialJSON eventstream.String `json:"partial_json"`
	StopReason  eventstream.String `json:"stop_reason"`
}
