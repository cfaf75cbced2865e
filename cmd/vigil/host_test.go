package main

import (
	"bytes"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestStartupLogWritesOnlyFailuresApplyDidNotReturn: the bus's line of a
// failure that config.Apply returns is dropped (the command prints the
// error once); one Apply did not return, and every other line, is kept.
func TestStartupLogWritesOnlyFailuresApplyDidNotReturn(t *testing.T) {
	var out bytes.Buffer
	l := &startupLog{w: &out, holding: true}
	lines := []string{
		"2026-12-01T08:00:00.000Z [WARN]  vigil.tools/mcp: server says hello\n",
		`2026-12-01T08:00:00.000Z [ERROR] vigil.tools/fs: apply failed: error="tools/fs: open root: no such dir"` + "\n",
		`2026-12-01T08:00:00.000Z [ERROR] vigil.late: apply failed: error="late: \"boom\""` + "\n",
	}
	for _, s := range lines {
		_, err := l.Write([]byte(s))
		assert.NoError(t, err)
	}
	assert.Equal(t, lines[0], out.String(), "failure lines are held while applying")
	l.release(errors.New(`tools/fs (line 4): plugin "tools/fs": apply: tools/fs: open root: no such dir`))
	assert.Equal(t, lines[0]+lines[2], out.String())

	_, _ = l.Write([]byte(lines[1]))
	assert.Equal(t, lines[0]+lines[2]+lines[1], out.String(), "after startup every line passes")
}
