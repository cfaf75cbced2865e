package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// --approval-ttl is refused where no worker would keep it, and when
// negative.
func TestApprovalTTLFlagIsCheckedBeforeAnythingStarts(t *testing.T) {
	for _, args := range [][]string{
		{"serve", "--workers", "0", "--approval-ttl", "1h"},
		{"serve", "--approval-ttl", "-1s"},
		{"worker", "--approval-ttl", "-1s"},
	} {
		code, _, stderr := runVigil(t, args...)
		assert.Equal(t, exitUsage, code, "%v: %s", args, stderr)
		assert.Contains(t, stderr, "--approval-ttl", "%v", args)
	}
}
