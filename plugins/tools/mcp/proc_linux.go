//go:build linux

package mcp

import (
	"os/exec"
	"syscall"
)

// ownProcess makes the subprocess the leader of its own process group,
// killed with that group when the plugin cancels it, and killed by the
// kernel when the host dies (parent death signal). The death signal is
// tied to the thread that starts the process; the Go runtime does not end
// threads that run ordinary goroutines, so it lasts as long as the host.
func ownProcess(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	cmd.Cancel = func() error {
		killGroup(cmd)
		return nil
	}
}
