// Package pluginpb is the wire protocol of Vigil's out-of-process plugins:
// the gRPC services in plugin.proto and the go-plugin handshake that
// starts them. The Go code is generated and committed; regenerate it after
// editing plugin.proto with
//
//	go generate ./plugins/proto
//
// which runs
//
//	protoc --go_out=. --go_opt=paths=source_relative \
//	       --go-grpc_out=. --go-grpc_opt=paths=source_relative plugin.proto
//
// and needs protoc (Debian: apt-get install -y protobuf-compiler) and the
// two Go generators on PATH, installed from this module so that their
// versions are the ones in go.mod:
//
//	go install google.golang.org/protobuf/cmd/protoc-gen-go
//	go install google.golang.org/grpc/cmd/protoc-gen-go-grpc
//
// # Process contract
//
// A plugin is an executable started by the host with the go-plugin
// handshake: the host sets the environment variable [MagicCookieKey] to
// [MagicCookieValue] and PLUGIN_PROTOCOL_VERSIONS to the versions it
// speaks ([ProtocolVersion]); the plugin writes one line on stdout,
//
//	1|<protocol version>|unix|<socket path>|grpc|<base64 server certificate>
//
// and serves the [PluginServer] on that socket with mutual TLS against the
// certificate in PLUGIN_CLIENT_CERT (go-plugin's AutoMTLS). Nothing else
// may be written to stdout before that line. Logs go to stderr, one JSON
// object per line in hclog's format ({"@level":"info","@message":"…"}),
// and the host re-emits them through the plugin's logger.
//
// The host holds the write end of a pipe whose read end the plugin
// inherits as file descriptor 3 and names in [LifelineEnv]. The host never
// writes to it: when the host process dies, for whatever reason, the pipe
// reaches end of file and the plugin must exit. That is how no plugin
// process outlives its host.
//
// The plugin set served under the handshake has one plugin, named
// [PluginName]. The [HostServer] is reached through the go-plugin broker
// at the id the host sends in ConfigureRequest.
package pluginpb

//go:generate protoc --go_out=. --go_opt=paths=source_relative --go-grpc_out=. --go-grpc_opt=paths=source_relative plugin.proto
