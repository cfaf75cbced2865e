// Package otel is the telemetry/otel plugin: every turn of every session
// as an OpenTelemetry trace, in the GenAI semantic conventions, exported
// over OTLP (gRPC or HTTP) with the official SDK, and the
// gen_ai.client.token.usage and gen_ai.client.operation.duration
// histograms beside it.
//
// # Spans from the log
//
// One fold, [Spans], turns a session's records into spans: a turn
// (turn/start … turn/end) is an invoke_agent span, the root of its trace;
// each step's model call (step/start … its assistant/message) is a
// "chat {model}" span; each tool call (tool/call … tool/result) an
// "execute_tool {name}" span; the chat and tool spans are children of the
// turn's, in the order they happened. Times are the events' times; the
// trace id is derived from the session id and the turn's first seq, a
// span id from the session id and the span's first seq. Attributes are
// those of go.opentelemetry.io/otel/semconv/v1.41.0 (the latest version
// of the conventions in otel v1.47.0 that defines GenAI): gen_ai.operation.name,
// gen_ai.provider.name, gen_ai.request.model, gen_ai.request.max_tokens,
// gen_ai.request.temperature, gen_ai.response.finish_reasons,
// gen_ai.usage.input_tokens and output_tokens (a turn's are its steps'
// sum), gen_ai.tool.name, gen_ai.tool.call.id, gen_ai.conversation.id (the
// session id), error.type; and Vigil's own, which link a span to the log:
// vigil.session.seq.first and vigil.session.seq.last, vigil.request.digest
// (the step's request/digest), vigil.turn, vigil.step, vigil.turn.reason.
// A failed step, a tool result with an error and a turn that did not
// complete have an error status. Message content (gen_ai.input.messages,
// gen_ai.output.messages, gen_ai.system_instructions, tool arguments and
// results) is added only with content: true.
//
// The plugin observes committed records (the session/event observers)
// and feeds each through the same fold, emitting a span when the event
// that closes it commits (a chat span at its step/end, which holds the
// usage). `vigil trace` folds a stored log with it and exports the result
// ([Export], [OTLPJSON]), so a session traced live and exported again is
// the same trace, and a session recorded before tracing was switched on
// can be exported after the fact. Records that reach a log without a
// commit (crash repair's closers, a fork's inherited prefix) are not
// traced live; `vigil trace` exports the repaired turns, and leaves a
// fork's inherited turns to its parent's trace.
//
// # Never in the way of a turn
//
// Spans go through the SDK's BatchSpanProcessor, whose queue is bounded
// (queue_size); a gate in front of it drops, counts and logs once what the
// queue has no room for, and a failed export is counted the same way, so
// an unreachable or hanging collector costs a turn nothing. [Telemetry.Dropped]
// says how many spans were lost; the totals are logged when the plugin
// stops, which waits at most the config's timeout.
//
// What the config leaves empty, the standard OTEL_* environment variables
// say, as the SDK reads them (endpoint, headers, service name, resource
// attributes, queue size).
package otel
