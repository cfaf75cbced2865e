package main

import (
	"crypto/rand"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/mod/sumdb/note"
)

// TestAnAnchorSavedWithAnExtraNewlineIsTheNote: a receipt saved by jq -r
// or echo ends in two newlines; --anchor reads the note it holds.
func TestAnAnchorSavedWithAnExtraNewlineIsTheNote(t *testing.T) {
	skey, vkey, err := note.GenerateKey(rand.Reader, "k")
	require.NoError(t, err)
	signer, err := note.NewSigner(skey)
	require.NoError(t, err)
	msg, err := note.Sign(&note.Note{Text: "vigil/session/s\n1\nAAAA\n"}, signer)
	require.NoError(t, err)
	dir := t.TempDir()
	for name, data := range map[string][]byte{"exact": msg, "jq": append(append([]byte(nil), msg...), '\n'), "crlf": append(append([]byte(nil), msg...), '\r', '\n')} {
		path := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(path, data, 0o600))
		a, err := auditOf([]string{vkey}, []string{path})
		require.NoError(t, err)
		require.Len(t, a.Anchors, 1)
		assert.Equal(t, msg, a.Anchors[0], name)
		_, err = note.Open(a.Anchors[0], a.Verifiers)
		assert.NoError(t, err, name)
	}
}
