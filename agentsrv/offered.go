package agentsrv

import (
	"runtime/debug"

	"github.com/hashicorp/go-hclog"

	"github.com/vigil-run/vigil"
)

// Offered is [Agents] for a protocol server: the agents that cannot be
// offered are logged on log as left out of protocol, and the error is
// returned only when no list could be made.
func Offered(rt *vigil.Runtime, log hclog.Logger, protocol string) ([]Agent, error) {
	agents, err := Agents(rt)
	if err != nil {
		if agents == nil {
			return nil, err
		}
		log.Warn("some agents are not offered over "+protocol, "error", err)
	}
	return agents, nil
}

// Version is what a protocol server says its version is when its options
// name none: the module's version from the build, or "(devel)".
func Version() string {
	if info, ok := debug.ReadBuildInfo(); ok && info.Main.Version != "" {
		return info.Main.Version
	}
	return "(devel)"
}
