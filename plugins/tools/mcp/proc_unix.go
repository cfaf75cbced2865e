//go:build unix && !linux

package mcp

import (
	"os/exec"
	"syscall"
)

// ownProcess makes the subprocess the leader of its own process group,
// killed with that group when the plugin cancels it. Without a parent
// death signal on this platform, a host killed outright leaves it to
// notice that its stdin closed.
func ownProcess(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error {
		killGroup(cmd)
		return nil
	}
}
