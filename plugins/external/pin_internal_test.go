//go:build unix

package external

import (
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Both kinds of private copy run what was copied, with the lifeline still
// the process's fd 3; a script too, whose interpreter opens the copy by the
// name it was executed by (its $0).
func TestAPinnedCopyRunsWhatWasCopied(t *testing.T) {
	const script = "#!/bin/sh\necho \"ran $1, fd 3 open: $(test -e /dev/fd/3 && echo yes)\"\n"
	copies := map[string]func(io.Reader, string) (*pinned, error){
		"the platform's copy": privateCopy,
		"a private file":      privateFile,
	}
	for name, copyTo := range copies {
		t.Run(name, func(t *testing.T) {
			p, err := copyTo(strings.NewReader(script), filepath.Join(t.TempDir(), "plugin"))
			require.NoError(t, err)
			r, w, err := os.Pipe()
			require.NoError(t, err)
			defer w.Close()
			proc, err := newProcess(exec.Command("/configured/plugin", "x"), r, p)
			require.NoError(t, err)
			require.NoError(t, proc.Start(context.Background()))
			out, err := io.ReadAll(proc.Stdout())
			require.NoError(t, err)
			require.NoError(t, proc.Wait(context.Background()))
			assert.Equal(t, "ran x, fd 3 open: yes\n", string(out))
			assert.Equal(t, "/configured/plugin", proc.Name())
		})
	}
}
