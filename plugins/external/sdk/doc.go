// Package sdk writes Vigil plugins that run as their own process, over
// hashicorp/go-plugin. A plugin is a [Plugin] value — its name, typed
// config and a few hooks — handed to [Serve] from main:
//
//	func main() {
//		sdk.Serve(&sdk.Plugin[Config]{
//			Name:  "units",
//			Tools: []sdk.Tool{convertTool},
//		})
//	}
//
// The host (the "external" plugin of the vigil binary, configured in
// plugins.yaml with the path of the binary) starts the process, applies
// it with the entry's config, subscribes it to the session events its
// hooks ask for and offers its tools to the model:
//
//   - [Plugin.Configure] receives the config, decoded strictly into C, and
//     the [Host], through which the plugin reads a session's messages,
//     emits events and logs.
//   - [Plugin.OnEvent] observes committed session events: each record of
//     the log, as its canonical JSON line, after it was committed.
//   - [Plugin.Validate] sees each session event before it is committed
//     and may refuse it by returning an error, typically [Veto]. The
//     append then fails and nothing is logged. A tool call the agent loop
//     proposes is seen once, before it is logged ([Event.Proposed]): return
//     [Ask] to have a person decide it; the turn then waits for the
//     decision.
//   - [Plugin.Tools] are tools the model can call.
//   - [Plugin.Score] makes the plugin a scorer for `vigil eval` (the
//     suite's `plugin` scorer starts it): it scores one [ScorePair], the
//     recorded turn and the candidate's, at a time. A scorer is
//     configured with the suite's config and gets no [Host].
//
// [Plugin.Types] limits OnEvent and Validate to records of the listed
// types, which spares a gRPC round trip for every other event.
//
// Hooks run concurrently and must be safe for concurrent use. Each call
// is bounded by the host's timeout (config key timeout); its context is
// cancelled when the host gives up.
//
// A plugin must not write to stdout before Serve: the first line on
// stdout is the go-plugin handshake. Log with [Logger], which writes to
// stderr in the JSON form the host re-emits through its own logger.
//
// The plugin process exits when the host disposes it, and also when the
// host process dies, however abruptly: Serve watches a lifeline pipe the
// host holds open (see package pluginpb).
package sdk
