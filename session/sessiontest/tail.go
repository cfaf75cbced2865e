package sessiontest

import (
	"context"
	"fmt"
	"io"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-run/vigil/session"
)

// RunTail is the conformance suite of [session.Tailer]: a store's Tail
// answers what the tail cut from its whole loaded log answers
// ([session.TailOf]), wherever the log ends.
func RunTail(t *testing.T, open func(t *testing.T) session.Store) {
	ctx := context.Background()
	var three []session.Record
	for i := 1; i <= 3; i++ {
		three = append(three, Turn(t, int64(len(three)), i)...)
	}
	for i, records := range [][]session.Record{
		nil,                  // no record
		three[:1],            // just a turn/start
		three[:len(three)/3], // one turn
		three[:len(three)-4], // an open turn
		three,                // three turns, the last ended
	} {
		t.Run(fmt.Sprintf("log%d", i), func(t *testing.T) {
			s := open(t)
			if cl, ok := s.(io.Closer); ok {
				t.Cleanup(func() { assert.NoError(t, cl.Close()) })
			}
			require.Implements(t, (*session.Tailer)(nil), s)
			id := fmt.Sprintf("tail%d", i)
			require.NoError(t, s.Create(ctx, info(id)))
			if len(records) > 0 {
				require.NoError(t, s.Append(ctx, id, 0, records))
			}
			log, err := s.Load(ctx, id)
			require.NoError(t, err)
			want := session.TailOf(log.Info, log.Records)
			got, err := s.(session.Tailer).Tail(ctx, id)
			require.NoError(t, err)
			assert.Equal(t, want.Info.ID, got.Info.ID)
			assert.Equal(t, int64(len(records)), got.Next)
			require.Len(t, got.Records, len(want.Records))
			for i := range want.Records {
				assert.Equal(t, string(want.Records[i].AppendLine(nil)), string(got.Records[i].AppendLine(nil)))
			}
			_, err = s.(session.Tailer).Tail(ctx, "unknown")
			assert.ErrorIs(t, err, session.ErrNotFound)
		})
	}
}
