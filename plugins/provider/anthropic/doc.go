// Package anthropic is the provider/anthropic plugin: a model provider for
// the Anthropic Messages API (and servers that speak it), streaming.
//
// Requests map the header's system prompt to the system parameter, tool
// calls to assistant tool_use blocks and tool results to tool_result
// blocks of a user message. Anthropic expects user and assistant turns to
// alternate, so consecutive messages that map to the same role (the
// results of parallel tool calls, typically) are sent as one message.
// max_tokens is required by the API: the header's value is used, else the
// config's, else 1024. A header's output_schema is sent as structured
// output, output_config.format {"type":"json_schema","schema"}, the
// schema as logged.
//
// The stream becomes [agentloop.Chunk] values: text deltas, thinking
// deltas as reasoning, input_json_delta fragments as tool-call arguments
// (indexed by the call's ordinal within the reply, not by content block),
// and one final chunk with the usage and the stop reason mapped to the
// loop's finish vocabulary. Each tool_use block is a call of its own,
// whatever its id; one without a name is an [ErrMalformedStream].
//
// A response is bounded: a stream that sends nothing for
// stream_idle_timeout (default 5m), or whose body grows past
// max_response_bytes (default 64 MiB), is cut off with an error wrapping
// [ErrStreamIdle] or [ErrResponseTooLarge] that names the setting; it is
// logged and ends the step (a stall before any chunk is retryable).
//
// Errors are [*agentloop.ProviderError] values. Rate limits (429),
// overload (529) and other server errors are retryable, with the server's
// Retry-After, unless the server's x-should-retry says otherwise (it may
// also make another status retryable); the agent loop retries, so the
// provider never retries on its own. No part of the API key appears in an
// error's text, however the server echoes it. The environment
// (ANTHROPIC_API_KEY, ANTHROPIC_BASE_URL, profiles) is not consulted: the
// config is the only source.
//
// The request and the stream are our own wire types (wire.go) for the one
// endpoint the provider uses, sent with the headers the official Go SDK
// (anthropic-sdk-go v2.15.0) sends, anthropic-version among them; the SDK
// is their oracle in tests: for the same conversation the body is the
// JSON text the SDK's client sends, and every recorded or generated
// stream reads as the SDK reads it (oracle_test.go). The binary does not
// compile the SDK.
package anthropic
