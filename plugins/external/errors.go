package external

import (
	"errors"
	"fmt"
)

// Sentinel errors callers branch on with errors.Is.
var (
	// ErrChecksum: the binary's SHA-256 is not the configured one; the
	// plugin was not started.
	ErrChecksum = errors.New("external: checksum mismatch")
	// ErrHandshake is wrapped by every failure to start the plugin
	// protocol: a stray line on stdout, a protocol version mismatch, a
	// process that exited or did not answer in time.
	ErrHandshake = errors.New("external: handshake failed")
	// ErrStrayOutput: the plugin wrote something other than the go-plugin
	// handshake line to stdout first (it wraps ErrHandshake too).
	ErrStrayOutput = errors.New("external: plugin wrote to stdout before the handshake")
	// ErrExited: the plugin process is not running (it crashed, exited or
	// was disposed).
	ErrExited = errors.New("external: plugin process exited")
	// ErrTimeout: the plugin did not answer within the configured timeout.
	ErrTimeout = errors.New("external: plugin timed out")
)

// VersionError is a handshake with a plugin that speaks another protocol
// version than the host. It matches ErrHandshake.
type VersionError struct {
	// Path is the plugin binary.
	Path string
	// Plugin and Host are the protocol versions of each side.
	Plugin, Host int
}

func (e *VersionError) Error() string {
	fix := "rebuild the plugin against the github.com/vigil-run/vigil/plugins/external/sdk of this host"
	if e.Plugin > e.Host {
		fix = "upgrade the host, or use a plugin built for this host"
	}
	return fmt.Sprintf("external: %s speaks plugin protocol version %d, this host speaks version %d: %s", e.Path, e.Plugin, e.Host, fix)
}

// Is makes a VersionError match ErrHandshake.
func (e *VersionError) Is(target error) bool { return target == ErrHandshake }

// VetoError is a plugin's refusal of a session event, returned by the
// append it refused (wrapped).
type VetoError struct {
	// Plugin is the refusing plugin's name (its plugins.yaml id).
	Plugin string
	// Code and Reason are the plugin's.
	Code   string
	Reason string
	// Ask: the plugin answered ask for an event that cannot wait for a
	// decision (of type Type): anything but a tool call the agent loop
	// proposed. It is refused.
	Ask  bool
	Type string
}

func (e *VetoError) Error() string {
	if e.Ask {
		return fmt.Sprintf("plugin %s asked for a decision on a %s event, which cannot wait for one (only a tool call the agent loop proposes can), so it is refused: %s: %s", e.Plugin, e.Type, e.Code, e.Reason)
	}
	return fmt.Sprintf("plugin %s vetoed the event: %s: %s", e.Plugin, e.Code, e.Reason)
}

// UnavailableError refuses an event of a type a plugin validates while
// the plugin cannot be consulted: its entry is being applied again (its
// process stopping or starting), its process exited (crashed, was killed),
// or applying the entry again failed. A policy that cannot be consulted
// lets nothing through. It matches ErrExited.
type UnavailableError struct {
	// Entry is the plugins.yaml id of the plugin's entry (the plugin's
	// name when it was applied without one).
	Entry string
	// Plugin is the plugin's name.
	Plugin string
	// Exit is how its process ended when it exited on its own: "exit
	// status 3", "signal: killed". Empty when its process was stopped.
	Exit string
	// Start is why applying the entry again failed, if it did.
	Start error
	// Type is the refused event's type.
	Type string
}

func (e *UnavailableError) Error() string {
	return fmt.Sprintf("external: entry %q (plugin %s) %s; the %s events it validates are refused until it is ready again (fail: closed)", e.Entry, e.Plugin, e.why(), e.Type)
}

// why says why the plugin cannot be consulted.
func (e *UnavailableError) why() string {
	s := "is being applied again"
	if e.Exit != "" {
		s = "exited (" + e.Exit + ")"
	}
	if e.Start != nil {
		s += "; applying it again failed: " + e.Start.Error()
	}
	return s
}

// Is makes an UnavailableError match ErrExited.
func (e *UnavailableError) Is(target error) bool { return target == ErrExited }
