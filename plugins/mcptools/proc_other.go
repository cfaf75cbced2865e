//go:build !unix

package mcptools

import "os/exec"

// ownProcess keeps exec's default: cancelling kills the process.
func ownProcess(*exec.Cmd) {}
