//go:build !unix

package mcp

import "os/exec"

// ownProcess keeps exec's default: cancelling kills the process.
func ownProcess(*exec.Cmd) {}

// killGroup kills the process; there is no group to reach here.
func killGroup(cmd *exec.Cmd) { _ = cmd.Process.Kill() }
