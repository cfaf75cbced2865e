package mcp

import (
	"bytes"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"
	"github.com/stretchr/testify/assert"
)

func TestLineLoggerLogsWholeLines(t *testing.T) {
	var buf bytes.Buffer
	w := &lineLogger{log: hclog.New(&hclog.LoggerOptions{Output: &buf, JSONFormat: true})}
	_, _ = w.Write([]byte("first\nsec"))
	_, _ = w.Write([]byte("ond\r\nthi"))
	_, _ = w.Write([]byte(strings.Repeat("x", maxLine)))
	w.flush()

	var lines []string
	for _, l := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
		i := strings.Index(l, `"line":"`)
		rest := l[i+len(`"line":"`):]
		lines = append(lines, rest[:strings.IndexByte(rest, '"')])
	}
	assert.Equal(t, []string{"first", "second", "thi" + strings.Repeat("x", maxLine-3), "xxx"}, lines)
}
