package session_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-run/vigil/session"
)

func TestCheckForkHoldsAForkToItsParentsLog(t *testing.T) {
	epoch := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	rec := func(seq int64, content string) session.Record {
		r, err := session.NewRecord(seq, epoch, session.Event{Type: session.TypeUserMessage, Turn: 1, Data: session.UserMessage{Content: content}})
		require.NoError(t, err)
		return r
	}
	parentRecs := []session.Record{rec(0, "a"), rec(1, "b"), rec(2, "c")}
	parent := &session.Log{Info: session.Info{ID: "p", Created: epoch}, Records: parentRecs}
	forkOf := func(root string, inherited ...session.Record) *session.Log {
		recs := append(append([]session.Record(nil), inherited...), rec(int64(len(inherited)), "own"))
		return &session.Log{Info: session.Info{ID: "f", Created: epoch, Parent: &session.Parent{ID: "p", Seq: 1, Root: root}}, Records: recs}
	}
	bound := session.RootOf(parentRecs[:2])
	edited := []session.Record{rec(0, "a"), rec(1, "B")}

	for _, tc := range []struct {
		name string
		fork *session.Log
		want string // in the error; "" for none
	}{
		{"a bound fork of this parent", forkOf(bound, parentRecs[:2]...), ""},
		{"an unbound fork with the parent's records", forkOf("", parentRecs[:2]...), ""},
		{"a header root that is not the parent's", forkOf(session.RootOf(edited), edited...), "the parent was edited or swapped"},
		{"an unbound fork whose inherited records were edited", forkOf("", edited...), "the inherited records are not the parent's"},
		{"a bound fork whose inherited records were edited", forkOf(bound, edited...), "the inherited records are not the parent's"},
		{"a fork cut before its seq", &session.Log{Info: forkOf(bound).Info, Records: parentRecs[:1]}, "the fork holds 1 records, not the 2 it inherited"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fe := session.CheckFork(tc.fork, parent)
			if tc.want == "" {
				assert.Nil(t, fe)
				return
			}
			require.NotNil(t, fe)
			assert.Contains(t, fe.Msg, tc.want)
			assert.Equal(t, int64(1), fe.Seq)
		})
	}

	t.Run("a seq past the parent's log", func(t *testing.T) {
		f := forkOf("", parentRecs[:2]...)
		f.Info.Parent.Seq = 5
		fe := session.CheckFork(f, parent)
		require.NotNil(t, fe)
		assert.Contains(t, fe.Error(), "the parent's log has seqs 0-2")
	})
	t.Run("no fork, or another parent", func(t *testing.T) {
		assert.Nil(t, session.CheckFork(parent, parent))
		other := &session.Log{Info: session.Info{ID: "q"}, Records: parentRecs}
		assert.Nil(t, session.CheckFork(forkOf("", edited...), other))
	})
}
