//go:build unix

package main

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestServeReloadsTheTokenFileOnSIGHUP runs the real binary with a token
// file: SIGHUP puts a new file in force at once, revoking the tokens it no
// longer holds; a file that fails to parse is logged and the tokens in
// force are kept; the server goes on serving throughout.
func TestServeReloadsTheTokenFileOnSIGHUP(t *testing.T) {
	const alice, bob = "alice-0123456789abcdef", "bob-0123456789abcdef01"
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "plugins.yaml"), []byte(memoryServeConfig), 0o644))
	file := filepath.Join(dir, "tokens.txt")
	write := func(text string) { require.NoError(t, os.WriteFile(file, []byte(text), 0o600)) }
	write("# name tenant roles token\nalice acme viewer " + alice + "\n")
	s := serve(t, dir, "admin", "--token-file", file)
	status := func(tok string) int {
		t.Helper()
		req, err := http.NewRequestWithContext(context.Background(), "GET", s.base+"/v1/sessions", nil)
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer "+tok)
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		return resp.StatusCode
	}
	assert.Equal(t, http.StatusOK, status(alice))
	assert.Equal(t, http.StatusUnauthorized, status(bob))
	assert.Equal(t, http.StatusOK, status(s.token), "VIGIL_TOKENS beside the file")

	write("bob globex user,approver " + bob + "\n")
	require.NoError(t, s.cmd.Process.Signal(syscall.SIGHUP))
	require.True(t, s.log.waitFor("reloaded "+file+": 2 tokens in force", 20*time.Second), "%s", s.log)
	assert.Equal(t, http.StatusUnauthorized, status(alice), "revoked")
	assert.Equal(t, http.StatusOK, status(bob))
	assert.Equal(t, http.StatusOK, status(s.token), "VIGIL_TOKENS kept")

	write(bob + "\n") // the old format
	require.NoError(t, s.cmd.Process.Signal(syscall.SIGHUP))
	require.True(t, s.log.waitFor("reloading the token file failed; the tokens in force are kept", 20*time.Second), "%s", s.log)
	require.True(t, s.log.waitFor("line 1: a bare token", 20*time.Second), "%s", s.log)
	assert.NotContains(t, s.log.String(), bob, "the log never shows a token")
	assert.Equal(t, http.StatusOK, status(bob), "kept")
	assert.Equal(t, http.StatusUnauthorized, status(alice))
	s.stop()
}
