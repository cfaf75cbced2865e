package jsonl_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-run/vigil/session"
	"github.com/vigil-run/vigil/session/jsonl"
	"github.com/vigil-run/vigil/session/sessiontest"
)

// Tail, which reads a log from its end, answers what the tail cut from
// the whole loaded log answers, whatever the chunk size and wherever the
// log ends (no record, no turn, a turn open or ended, a torn line).
func TestTailIsTheLoadedLogsTail(t *testing.T) {
	ctx := context.Background()
	turns := func(n int) []session.Record {
		var recs []session.Record
		for i := 1; i <= n; i++ {
			recs = append(recs, sessiontest.Turn(t, int64(len(recs)), i)...)
		}
		return recs
	}
	three := turns(3)
	for _, tc := range []struct {
		name    string
		records []session.Record
		torn    string
	}{
		{"header only", nil, ""},
		{"header and a torn line", nil, `{"seq":0,"type":"tu`},
		{"one turn", turns(1), ""},
		{"three turns", three, ""},
		{"an open turn", three[:len(three)-4], ""},
		{"just a turn/start", three[:1], ""},
		{"a torn turn/start", three[:len(three)-1], string(three[len(three)-1].AppendLine(nil)[:20])},
		{"a whole line without its newline", three[:len(three)-1], string(three[len(three)-1].AppendLine(nil)[:len(three[len(three)-1].AppendLine(nil))-1])},
	} {
		for _, chunk := range []int{1, 2, 7, 100, 64 << 10} {
			t.Run(tc.name, func(t *testing.T) {
				defer jsonl.SetTailChunk(chunk)()
				dir := t.TempDir()
				content := session.AppendHeaderLine(nil, info("s1"))
				for _, r := range tc.records {
					content = r.AppendLine(content)
				}
				content = append(content, tc.torn...)
				require.NoError(t, os.WriteFile(filepath.Join(dir, "s1.jsonl"), content, 0o644))
				s := open(t, dir)
				log, err := s.Load(ctx, "s1")
				require.NoError(t, err)
				want := session.TailOf(log.Info, log.Records)
				got, err := s.Tail(ctx, "s1")
				require.NoError(t, err, "chunk %d", chunk)
				assert.Equal(t, want.Info, got.Info)
				assert.Equal(t, want.Next, got.Next, "chunk %d", chunk)
				require.Len(t, got.Records, len(want.Records), "chunk %d", chunk)
				for i := range want.Records {
					assert.Equal(t, string(want.Records[i].AppendLine(nil)), string(got.Records[i].AppendLine(nil)))
				}
			})
		}
	}
	_, err := open(t, t.TempDir()).Tail(ctx, "nope")
	assert.ErrorIs(t, err, session.ErrNotFound)
}

// A follower reads a long log a chunk at a time (a line longer than a
// chunk included) and yields every record, in order, from where it
// starts.
func TestFollowReadsInChunks(t *testing.T) {
	var recs []session.Record
	for i := 1; i <= 3; i++ {
		recs = append(recs, sessiontest.Turn(t, int64(len(recs)), i)...)
	}
	dir := t.TempDir()
	content := session.AppendHeaderLine(nil, info("s1"))
	for _, r := range recs {
		content = r.AppendLine(content)
	}
	require.NoError(t, os.WriteFile(filepath.Join(dir, "s1.jsonl"), content, 0o644))
	s := open(t, dir)
	for _, chunk := range []int{5, 64, 1 << 20} {
		for _, from := range []int64{0, 17, int64(len(recs) - 1)} {
			func() {
				defer jsonl.SetFollowChunk(chunk)()
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				var got []int64
				for rec, err := range s.Follow(ctx, "s1", from) {
					require.NoError(t, err)
					got = append(got, rec.Seq())
					if rec.Seq() == int64(len(recs)-1) {
						cancel()
					}
				}
				require.Len(t, got, len(recs)-int(from), "chunk %d from %d", chunk, from)
				for i, seq := range got {
					assert.Equal(t, from+int64(i), seq)
				}
			}()
		}
	}
}

func TestTailConformance(t *testing.T) {
	sessiontest.RunTail(t, func(t *testing.T) session.Store { return open(t, t.TempDir()) })
}
