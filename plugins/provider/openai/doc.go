// Package openai is the provider/openai plugin: a model provider for the
// OpenAI Chat Completions API and every server that speaks it (OpenAI,
// DeepSeek, Ollama, vLLM, the llama.cpp server), selected by base URL.
//
// The provider streams with stream_options.include_usage and turns the
// stream into [agentloop.Chunk] values: text deltas, reasoning deltas
// (the reasoning_content field DeepSeek sends, or the reasoning field of
// vLLM and Ollama), tool-call fragments, and one final chunk with the
// usage and the finish reason. Tool-call indices are renumbered densely
// in order of first appearance, so a server that omits or skips indices
// still yields calls 0, 1, 2, …. The server's index wins over the call's
// id: calls that share an id stay apart (the agent loop makes ids
// unique). A fragment that carries nothing is skipped, and a call that is
// never named ends the stream with [ErrMalformedStream].
//
// Reasoning goes back on assistant messages as reasoning_content, which
// DeepSeek's thinking mode requires in tool-calling conversations.
// Messages without reasoning carry no such field, so requests to OpenAI
// stay within its schema.
//
// A header's output_schema is sent as Structured Outputs:
// response_format {"type":"json_schema","json_schema":{"name","schema",
// "strict"}}, the schema as logged, named by its title when that is a valid
// name (else "output"), strict only when every object in it is closed
// (additionalProperties false) and requires all its properties, as strict
// mode demands; the agent loop validates the answer either way.
//
// A response is bounded: a stream that sends nothing for
// stream_idle_timeout (default 5m), or whose body grows past
// max_response_bytes (default 64 MiB), is cut off with an error wrapping
// [ErrStreamIdle] or [ErrResponseTooLarge] that names the setting; it is
// logged and ends the step (a stall before any chunk is retryable).
//
// Errors are [*agentloop.ProviderError] values. Rate limits (429) and
// server errors (5xx) are marked retryable with the server's Retry-After,
// unless the server's x-should-retry says otherwise (it may also make
// another status retryable); the agent loop does the retrying, so the
// provider never retries on its own. No part of the API key appears in an
// error's text, however the server echoes it.
//
// The request and the stream are our own wire types (wire.go) for the one
// endpoint the provider uses, with the official Go SDK (openai-go) as
// their oracle in tests: for the same conversation the body is the JSON
// text the SDK's client sends, and every recorded or generated stream
// reads as the SDK reads it (oracle_test.go). The binary does not compile
// the SDK.
//
// The environment (OPENAI_API_KEY, OPENAI_BASE_URL, …) is not consulted:
// the plugin's config is the only source, so a key meant for OpenAI is
// never sent to a local server. Use ${OPENAI_API_KEY} in plugins.yaml to
// take it from the environment.
package openai
