package session_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/mod/sumdb/tlog"

	"github.com/vigil-run/vigil/session"
)

// TestMerkleTreeIsTlogsTree: the compact range gives the root tlog
// computes from every stored hash, at every size, and a record proof
// made from the stored hashes checks against it (what proofs of one
// turn build on).
func TestMerkleTreeIsTlogsTree(t *testing.T) {
	var tree session.MerkleTree
	var stored []tlog.Hash
	reader := tlog.HashReaderFunc(func(idx []int64) ([]tlog.Hash, error) {
		out := make([]tlog.Hash, len(idx))
		for i, x := range idx {
			out[i] = stored[x]
		}
		return out, nil
	})
	assert.Equal(t, tlog.Hash{}, tree.Root())
	for n := int64(0); n < 70; n++ {
		line := fmt.Appendf(nil, `{"seq":%d,"type":"memo/note","time":"2026-12-01T09:00:00.000Z","ignorable":true,"data":{}}`+"\n", n)
		hashes, err := tlog.StoredHashes(n, line[:len(line)-1], reader)
		require.NoError(t, err)
		stored = append(stored, hashes...)
		tree.Add(line)
		want, err := tlog.TreeHash(n+1, reader)
		require.NoError(t, err)
		require.Equal(t, want, tree.Root(), "size %d", n+1)
		require.Equal(t, n+1, tree.Size())
	}
	p, err := tlog.ProveRecord(70, 33, reader)
	require.NoError(t, err)
	leaf := session.LeafHash(fmt.Appendf(nil, `{"seq":33,"type":"memo/note","time":"2026-12-01T09:00:00.000Z","ignorable":true,"data":{}}`+"\n"))
	require.NoError(t, tlog.CheckRecord(p, 70, tree.Root(), 33, leaf))
}

func TestCheckpointTextRoundTrips(t *testing.T) {
	c := session.Checkpoint{Origin: session.CheckpointOrigin("s1"), Size: 18, Root: tlog.RecordHash([]byte("x")), Header: session.HeaderHashOf(session.Info{ID: "s1"})}
	got, err := session.ParseCheckpoint(string(c.Text()))
	require.NoError(t, err)
	assert.Equal(t, c, got)
	for _, bad := range []string{"", "o\n1\n", "o\n01\nAA==\nheader AA==\n", "o\n1\nAA==\nheader AA==\n", string(c.Text()) + "x\n"} {
		_, err := session.ParseCheckpoint(bad)
		assert.ErrorIs(t, err, session.ErrCheckpointText, "%q", bad)
	}
}

func FuzzParseCheckpoint(f *testing.F) {
	f.Add(string(session.Checkpoint{Origin: "vigil/session/s1", Size: 3}.Text()))
	f.Fuzz(func(t *testing.T, text string) {
		c, err := session.ParseCheckpoint(text)
		if err != nil {
			return
		}
		again, err := session.ParseCheckpoint(string(c.Text()))
		require.NoError(t, err)
		require.Equal(t, c, again)
	})
}
