package live

import "github.com/vigil-run/vigil/bus"

// Signing is a store plugin's `signing` setting in plugins.yaml: the key
// that signs its sessions' checkpoints, and whether its sessions must be
// signed.
type Signing struct {
	// KeyFile names the file holding the private key, as `vigil keys
	// generate` wrote it. The key itself is never in plugins.yaml (a file
	// that is read, copied and shared): ${VAR} may name the file. Empty:
	// the key VIGIL_SIGNING_KEY_FILE or VIGIL_SIGNING_KEY names, if any.
	KeyFile string `yaml:"key_file" vigil:"path" doc:"the file holding the private checkpoint signing key (vigil keys generate); default: VIGIL_SIGNING_KEY_FILE or VIGIL_SIGNING_KEY"`
	// Require states that every session of the store is signed: `vigil
	// verify --key` reports a log, or a turn end, without its checkpoint
	// as missing-checkpoint. A process with no key logs a warning, as it
	// writes sessions the requirement fails.
	Require bool `yaml:"require" doc:"every session must carry signed checkpoints: vigil verify reports a log or turn end without one as missing-checkpoint"`
}

// SigningService is the service under which a store plugin configured
// with a signing setting provides it, for `vigil verify` to hold the
// store's logs to its Require. No provider: nothing is required.
var SigningService = bus.NewService[Signing]("session/signing")
