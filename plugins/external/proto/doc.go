// Package pluginpb is the wire protocol of Vigil's out-of-process plugins:
// the gRPC services in plugin.proto and the go-plugin handshake that
// starts them. The Go code is generated and committed; regenerate it after
// editing plugin.proto with
//
//	go generate ./plugins/external/proto
//
// which runs
//
//	protoc --go_out=. --go_opt=paths=source_relative \
//	       --go-grpc_out=. --go-grpc_opt=paths=source_relative plugin.proto
//
// and needs protoc (Debian: apt-get install -y protobuf-compiler, 3.21.12
// in bookworm) and the two Go generators on PATH (go install puts them in
// $(go env GOPATH)/bin): protoc-gen-go from this module, so that its
// version is go.mod's google.golang.org/protobuf, and protoc-gen-go-grpc,
// a module of its own, at the version the headers of the generated files
// name:
//
//	apt-get install -y protobuf-compiler
//	go install google.golang.org/protobuf/cmd/protoc-gen-go
//	go install google.golang.org/grpc/cmd/protoc-gen-go-grpc@v1.6.2
//
// The Python stubs of examples/plugins/python are generated from the same
// file: run its gen.sh after go generate.
//
// # Process contract
//
// This section is what a plugin in another language implements; Go
// plugins get all of it from package plugins/external/sdk. A complete
// example in Python is examples/plugins/python.
//
// The host starts the executable with an environment of its own making:
// none of the host's variables (not even PATH: name an interpreter by
// its absolute path, as in a shebang) but those the entry's env
// allow-list passes, plus
//
//   - [MagicCookieKey]=[MagicCookieValue]: a process without it was not
//     started by a Vigil host and should say so on stderr and exit 1;
//   - PLUGIN_PROTOCOL_VERSIONS: the versions the host speaks, comma
//     separated ([ProtocolVersion]); a plugin that speaks none of them
//     exits 1;
//   - PLUGIN_CLIENT_CERT: the host's certificate, PEM-encoded (go-plugin's
//     AutoMTLS; a self-signed ECDSA P-521 CA certificate naming
//     localhost);
//   - PLUGIN_UNIX_SOCKET_DIR: the directory to create the socket in
//     (PLUGIN_MIN_PORT and PLUGIN_MAX_PORT matter only for tcp);
//   - [LifelineEnv]=3 and [LogLevelEnv], below.
//
// The plugin serves gRPC on a Unix socket with mutual TLS: its own
// certificate, and the certificate in PLUGIN_CLIENT_CERT as the only
// client CA, client certificates required. Then it writes one line on
// stdout, the handshake,
//
//	1|1|unix|/path/to/socket|grpc|MIIBkTCCATegAwIBAgIR…
//
// whose fields are go-plugin's core protocol version (1), the protocol
// version it speaks ([ProtocolVersion]), the network ("unix"; "tcp" with
// "127.0.0.1:port" also works), the address, the protocol ("grpc": the
// host accepts no other) and the plugin's certificate: its DER in
// standard base64 without padding (Go's base64.RawStdEncoding; padded
// base64 is refused). The host dials with server name "localhost", so the
// certificate must name localhost in a DNS subject alternative name (the
// common name is not checked); it must allow both server and client
// authentication (or have no extended key usage), as the plugin also
// presents it to the host's broker. Nothing else may be written to stdout,
// before or after. There is no seventh field: the host does not enable
// go-plugin's broker multiplexing.
//
// On that socket one gRPC server serves
//
//   - vigil.plugin.v1.Plugin, the [PluginServer] of plugin.proto. The host
//     calls Describe, Configure and ListTools in turn, then OnEvent,
//     Validate and CallTool concurrently, each bounded by the entry's
//     timeout (10s by default; a Validate unanswered in time vetoes), and
//     Dispose last;
//   - vigil.plugin.v1.Scorer, the [ScorerServer], by a plugin whose
//     Description sets scorer: a custom scorer of `vigil eval`. Such a
//     process is started by the eval, not by plugins.yaml: Describe,
//     Configure (host_broker_id 0: there is no Host service to dial),
//     then Score, concurrently, and Dispose;
//   - plugin.GRPCBroker (go-plugin's internal/plugin/grpc_broker.proto):
//     the host opens one StartStream at start and sends on it a ConnInfo
//     (service_id, network, address) for each service it serves. The
//     [HostServer] is the one whose service_id is the host_broker_id of
//     ConfigureRequest; its ConnInfo may arrive after Configure began, so
//     wait for it. Dial that address with the same mutual TLS: trust
//     PLUGIN_CLIENT_CERT, present the plugin's own certificate, server
//     name "localhost". Keep the stream open (ending it closes the
//     broker); a plugin that never calls Host still serves StartStream,
//     or go-plugin prints "plugin acceptAndServe error: broker closed" on
//     the host's stderr;
//   - plugin.GRPCController (grpc_controller.proto): the host calls
//     Shutdown right after Dispose, and the plugin answers and exits. A
//     plugin still running 2 seconds later is killed (and the host logs
//     "plugin failed to exit gracefully");
//   - grpc.health.v1.Health, answering SERVING for the service "plugin":
//     go-plugin's health check (the host does not call it today);
//   - plugin.GRPCStdio is optional: Go plugins forward what they write to
//     os.Stdout and os.Stderr through it; without it the host logs one
//     debug line and reads logs from stderr only.
//
// Logs go to stderr, one JSON object per line in hclog's format,
//
//	{"@level":"info","@message":"…","@timestamp":"2026-12-01T09:00:00.000000Z","key":"value"}
//
// (the timestamp has exactly six fractional digits and a zone; other keys
// are fields), which the host re-emits through the plugin's logger at
// their level; a line that is not JSON is logged at debug. Logging below
// [LogLevelEnv]'s level is wasted.
//
// The host holds the write end of a pipe whose read end the plugin
// inherits as file descriptor 3 and names in [LifelineEnv]. The host never
// writes to it: when the host process dies, for whatever reason, the pipe
// reaches end of file and the plugin must exit. That is how no plugin
// process outlives its host. The plugin should ignore SIGINT: a Ctrl-C at
// the host's terminal reaches it too, and the host decides when it stops.
//
// The plugin set served under the handshake has one plugin, named
// [PluginName].
//
// # Validate and ask
//
// Validate answers an empty ValidateResponse to let an event through and
// veto (with a code and a reason) to refuse it. A plugin that validates
// tool/call records is also sent each tool call the agent loop is about
// to log, with Event.proposed set (seq 0, in the field and in the line):
// that is the only Validate of that call (its commit is sent only if the
// record differs from the proposal).
// To have a person decide such a call rather than refuse it, answer
//
//	ValidateResponse{veto: true, ask: true, code: "ASK", reason: "…"}
//
// The host logs the call and an approval/request whose by is the
// plugin's name (Description.name) and whose reason is the reason, and
// the turn is suspended until the call is decided (vigil approve, vigil
// deny, …). Veto is set as well so that a host that predates ask refuses
// the call instead of running it. An ask about an event that is not
// proposed (any other type, a tool/call appended outside the loop)
// cannot wait for a decision and refuses it.
package pluginpb

//go:generate protoc --go_out=. --go_opt=paths=source_relative --go-grpc_out=. --go-grpc_opt=paths=source_relative plugin.proto
