package pluginpb

// The go-plugin handshake shared by the host and the SDK.
const (
	// ProtocolVersion is the version of this protocol. A host refuses a
	// plugin that speaks another one; bump it on every incompatible change
	// of plugin.proto.
	ProtocolVersion = 1
	// MagicCookieKey and MagicCookieValue tell a plugin binary that a
	// Vigil host started it (and not a user at a shell).
	MagicCookieKey   = "VIGIL_PLUGIN"
	MagicCookieValue = "4f2c8d0e-vigil-plugin-v1-a3e9b6f1"
	// PluginName names the one plugin in the served plugin set.
	PluginName = "vigil"
	// LifelineEnv names the file descriptor of the lifeline pipe: the
	// plugin exits when reading it reaches end of file (the host died).
	LifelineEnv = "VIGIL_PLUGIN_LIFELINE"
	// LogLevelEnv carries the host's log level for the plugin's logger
	// ("trace", "debug", "info", "warn", "error").
	LogLevelEnv = "VIGIL_PLUGIN_LOG_LEVEL"
)
