// Package external is the "external" plugin: it runs a Vigil plugin as its
// own process, over hashicorp/go-plugin, and maps what the plugin asks for
// onto the bus. Plugins are written with package plugins/external/sdk (Go) or
// against the gRPC protocol in plugins/external/proto (any language).
//
//	plugins:
//	  - id: units
//	    name: external
//	    config:
//	      path: ./bin/units          # the executable
//	      sha256: "9f86d08…"         # optional: refuse any other binary
//	      args: [--verbose]          # optional
//	      env: [HOME, "UNITS=metric"] # allow-list: nothing else is passed
//	      timeout: 5s                # every call (default 10s)
//	      start_timeout: 20s         # the start (default: max(timeout, 10s))
//	      fail: closed               # or open (see Failing closed)
//	      config: { precision: 4 }   # the plugin's own config, as JSON
//
// # Lifecycle
//
// Applying the plugin starts the process and completes the go-plugin
// handshake: gRPC only, mutual TLS (AutoMTLS), protocol version
// [pluginpb.ProtocolVersion]. A mismatch is a [*VersionError] naming both
// versions; anything the binary prints on stdout before the handshake is
// [ErrStrayOutput]; a binary whose SHA-256 is not the configured one is
// [ErrChecksum] and never runs. A pinned binary is read once: the bytes
// hashed are copied, as they are read, into a private copy (a sealed memfd
// on Linux, else a file in a directory only the host uses), and the process
// runs that copy, so a file swapped after the check never runs. (The
// plugin's os.Executable is then the copy, not its path; its argv[0] is
// still the path.)
//
// The host then asks the plugin to describe itself, configures it, and:
//
//   - provides each of its tools as an agentloop tool service, whose
//     Execute is one CallTool round trip;
//   - for a session/event subscription with observe, registers a
//     live.Committed listener that sends each committed record (its
//     canonical JSON line) of the subscribed types;
//   - for one with veto, has the entry's gate (a bus.Veto listener, see
//     Failing closed) send each record before it is committed; a veto
//     fails the append with a [*VetoError], and a plugin that does not
//     answer fails it too (a policy that cannot be consulted lets nothing
//     through) unless the entry says fail: open (see Asking for the
//     tool/call records);
//   - for session/created, a live.Created observer.
//
// Observers are called synchronously, in commit order, like every
// live.Committed listener: a slow plugin slows appends (each call at
// most by the timeout), and its failures are logged, never undo a commit.
// Subscribing to the few types a plugin needs keeps the rest of the log
// off the wire.
//
// The plugin calls the host back through the go-plugin broker: it emits
// [Emitted] events, reads a live session's derived messages (through the
// session manager, the "session/manager" service) and logs. Its stderr is
// re-emitted through the fiber's logger, JSON lines at their level.
//
// The fiber owns the process: disposing it (or reloading it) asks the
// plugin to dispose, then stops the process. Every call is bounded by the
// timeout, the start (handshake, describe, configure, list tools) by the
// start timeout; a tool call that times out is a PLUGIN_TIMEOUT tool error
// the model sees. When the process exits on its own (a crash), its calls
// fail (tool results with PLUGIN_UNAVAILABLE), the crash is logged with the
// exit status and the last stderr line, and the fiber fails (its Err wraps
// ErrExited; an Update starts the plugin again); the host and the session
// logs are unharmed. When the host process dies, the plugin exits too: it
// holds the read end of a pipe whose write end only the host has (see
// package pluginpb).
//
// # Asking
//
// A plugin that validates tool/call records is sent each tool call the
// agent loop proposes before it is logged, from the veto phase of the
// loop's tool/approve dispatch (the Event's proposed flag set, seq 0),
// and only then: its answer holds for the commit of that very record,
// which is not sent again (a record that differs from the proposal is).
// There it may answer ask (ValidateResponse.ask, sdk.Ask): the host
// returns an [*agentloop.AskError] by the plugin's name with its reason,
// and the loop logs the call with an approval/request and suspends the
// step until a decision, like an approvals rule's ask. A veto or no
// answer refuses the call at its commit, as for any record. An ask about
// anything else — another type, a tool/call appended without being
// proposed — cannot wait for a decision: it refuses the record with a
// [*VetoError] whose Ask is set.
//
// # Failing closed
//
// The records a plugin validates go through its entry's gate: one veto
// listener, in a fiber of its own under the root, from the moment the
// entry's first process is ready until the entry is removed. While a
// process is ready the gate asks it; whenever none is, it refuses the types
// the entry validated with an [*UnavailableError] naming the entry and why:
// the entry is being applied again (an edit, an Update: from before the old
// process stops until the new one is ready), its process exited on its own
// (the exit status), applying it again failed (the error, kept until an
// apply succeeds). A policy that cannot be consulted lets nothing through,
// at any moment: reloading the entry's fiber removes what the fiber
// registered, so a validator kept there would leave, with each reload, a
// moment with no validator at all. The gate lets through what only closes a
// turn (synthetic tool results coded TOOL_NOT_STARTED, TOOL_OUTCOME_UNKNOWN
// or TOOL_ABANDONED, step/end, turn/end), so the loop and crash repair can
// still end the turn and the session stays usable. With fail: open it lets
// everything through while no process is ready. Removing the entry removes
// its policy (the gate goes once the entry's disposal is requested). The
// gate applies the scope of the context the plugin was applied through.
//
// # Scorers
//
// [StartScorer] runs a plugin as a scorer for `vigil eval` (eval/score's
// `plugin` scorer), outside any bus: the same process, handshake, pin,
// environment and lifeline, then Describe (whose scorer flag must be set,
// else [ErrNotScorer]) and Configure with no Host service; then Score calls,
// each bounded by the timeout ([ErrTimeout]; a crash is [ErrExited]), and
// Close.
package external
