package openai

import (
	"encoding/json"

	"github.com/vigil-run/vigil/plugins/internal/eventstream"
)

// The wire types of the one endpoint Vigil uses, chat completions with
// streaming: exactly the fields it sends and reads. Fields are in the
// order the official SDK sends them, so a request is the same JSON text
// the SDK would send (oracle_test.go holds it to that).

// chatRequest is the body of POST chat/completions.
type chatRequest struct {
	Messages       []message     `json:"messages"`
	Model          string        `json:"model,omitempty"`
	MaxTokens      int64         `json:"max_tokens,omitempty"`
	Temperature    *float64      `json:"temperature,omitempty"`
	Stop           []string      `json:"stop,omitempty"`
	StreamOptions  streamOptions `json:"stream_options"`
	ResponseFormat *jsonFormat   `json:"response_format,omitempty"`
	Tools          []tool        `json:"tools,omitempty"`
	Stream         bool          `json:"stream"`
}

type streamOptions struct {
	IncludeUsage bool `json:"include_usage"`
}

// message is a message of any role; each role uses its own fields.
type message struct {
	// Content is absent only from an assistant message that calls tools.
	Content    *string    `json:"content,omitempty"`
	Name       string     `json:"name,omitempty"`
	ToolCalls  []toolCall `json:"tool_calls,omitempty"`
	ToolCallID *string    `json:"tool_call_id,omitempty"`
	Role       string     `json:"role"`
	// Reasoning is DeepSeek's reasoning_content, which is no field of the
	// SDK's: it sends it as an extra field, spelled as sjson spells it.
	Reasoning extraString `json:"reasoning_content,omitempty"`
}

type toolCall struct {
	ID       string       `json:"id"`
	Function functionCall `json:"function"`
	Type     string       `json:"type"`
}

type functionCall struct {
	Arguments string `json:"arguments"`
	Name      string `json:"name"`
}

type tool struct {
	Function function `json:"function"`
	Type     string   `json:"type"`
}

// function is a function definition with its parameters kept as the
// exact JSON Schema text the tool declared.
type function struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters,omitempty"`
}

// jsonFormat is Structured Outputs: {"json_schema":{…},"type":"json_schema"}.
type jsonFormat struct {
	JSONSchema jsonSchema `json:"json_schema"`
	Type       string     `json:"type"`
}

type jsonSchema struct {
	Name   string          `json:"name"`
	Strict bool            `json:"strict,omitempty"`
	Schema json.RawMessage `json:"schema"`
}

// extraString is a string spelled as the SDK spells its extra fields
// (through sjson): as is when it is printable ASCII without quotes or
// backslashes, else as encoding/json spells it by default, with <, > and
// & escaped. Either way it is the same JSON string.
type extraString string

func (s extraString) MarshalJSON() ([]byte, error) {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < ' ' || c > 0x7f || c == '"' || c == '\\' {
			return json.Marshal(string(s))
		}
	}
	return []byte(`"` + string(s) + `"`), nil
}

// chunk is one event of the stream. Its fields are read as the SDK
// reads them (see eventstream.String and Int): choices must be an array,
// usage counts only as an object, and a scalar of another JSON type than
// the API's is taken as the SDK takes it.
type chunk struct {
	Choices json.RawMessage `json:"choices"`
	Usage   json.RawMessage `json:"usage"`
}

type usage struct {
	PromptTokens     eventstream.Int `json:"prompt_tokens"`
	CompletionTokens eventstream.Int `json:"completion_tokens"`
}

type choice struct {
	Index        eventstream.Int           `json:"index"`
	Delta        eventstream.Object[delta] `json:"delta"`
	FinishReason eventstream.String        `json:"finish_reason"`
}

// delta is what a choice adds. The reasoning fields are kept raw: they
// are no fields of the SDK's, and one that is not a string is an error.
type delta struct {
	Content          eventstream.String              `json:"content"`
	Refusal          eventstream.String              `json:"refusal"`
	ToolCalls        eventstream.List[toolCallDelta] `json:"tool_calls"`
	ReasoningContent json.RawMessage                 `json:"reasoning_content"`
	Reasoning        json.RawMessage                 `json:"reasoning"`
}

// toolCallDelta is a fragment of a tool call; Index is not Set when the
// server sends none (older Ollama).
type toolCallDelta struct {
	Index    eventstream.Int                  `json:"index"`
	ID       eventstream.String               `json:"id"`
	Function eventstream.Object[functionName] `json:"function"`
}

type functionName struct {
	Name      eventstream.String `json:"name"`
	Arguments eventstream.String `json:"arguments"`
}
