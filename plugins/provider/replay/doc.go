// Package replay is the "provider/replay" plugin: a model that serves the
// streams recorded in a session log, so a conversation can be run again
// with no model and no key, and its requests compared with the original's.
//
// A [Recording] groups a log's model output by turn and step: the chunks
// of each step's assistant reply, the usage and finish of its step/end,
// and how the step failed, if it did. A [Provider] serves the steps in
// order, one per loop-built request. It fails a request beyond the
// recording ([ErrExhausted]) and reports a recording that was not used up
// ([Provider.Check], and an error logged when the plugin is disposed).
// With Verify set it also refuses a request whose digest differs from the
// recorded request/digest of that step ([ErrDiverged]).
//
// The provider names itself after the recorded provider, so that the
// request header of a replay equals the original's and so do the request
// digests.
//
// [Listen] mounts a provider as an llm/stream listener that answers
// loop-built requests itself and never calls next: a short-circuiting
// listener in front of whatever provider is configured. The invariants
// plugin's check still runs first (it is in the dispatch's veto phase);
// since no provider receives those requests, their steps log no
// request/digest.
//
// [Run] re-runs a whole recorded log through the real loop, each step
// with the request header and tools in force at that step, the model,
// the tools (tool/execute) and the approvals (tool/approve) answered from
// the recording (a continuation's retry of a call with the outcome its
// tool/reconcile logged), events outside turns copied (a person's
// tool/reconcile too), a crashed turn stopped
// where the process died and closed as repair closed it; the rerun must
// log the recorded events ([DivergedError] says where it did not) and
// each request the recorded digest. [Against] re-runs the recorded user
// turns through another composition's agent instead, answering from the
// recording while the requests match, and names the first request that
// differs ([Divergence]: the header field or message index, with the
// recorded and the new value); with Live the composition's own provider
// and tools take over from there.
//
// The plugin reads the recording named by its config. The Go API
// ([Load], [LoadSession], [FromRecords], [New], [Listen]) is for a
// program or a test that replays a log it holds without a plugins.yaml.
package replay
