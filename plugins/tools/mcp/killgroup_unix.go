//go:build unix

package mcp

import (
	"os/exec"
	"syscall"
)

// killGroup kills the process group the started cmd leads: the server and
// whatever it started that stayed in its group. The group's id stays
// reserved while any member lives, so after the leader was reaped this
// reaches only stragglers (or nothing).
func killGroup(cmd *exec.Cmd) {
	if err := syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); err != nil {
		_ = cmd.Process.Kill()
	}
}
