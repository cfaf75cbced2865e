package memory

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/vigil-run/vigil/session"
)

// TestRecordsChunks holds the chunked list equal to a flat slice across
// chunk boundaries, for batches of every size.
func TestRecordsChunks(t *testing.T) {
	pool := make([]session.Record, 8)
	for i := range pool {
		r, err := session.NewRecord(int64(i), time.Unix(0, 0), session.Event{Type: session.TypeEndSeed})
		if err != nil {
			t.Fatal(err)
		}
		pool[i] = r
	}
	rng := rand.New(rand.NewPCG(1, 2))
	var got records
	var want []session.Record
	for len(want) < 5*chunkLen {
		batch := make([]session.Record, rng.IntN(3*chunkLen/2))
		for i := range batch {
			batch[i] = pool[rng.IntN(len(pool))]
		}
		got.add(batch...)
		want = append(want, batch...)
		if got.n != len(want) {
			t.Fatalf("n = %d, want %d", got.n, len(want))
		}
		for range 20 {
			from := rng.IntN(len(want) + 1)
			to := from + rng.IntN(len(want)-from+1)
			if s := got.slice(from, to); !slices.Equal(s, want[from:to]) || (from == to) != (s == nil) {
				t.Fatalf("slice(%d, %d) differs from the flat list", from, to)
			}
		}
	}
	for i, c := range got.chunks[:len(got.chunks)-1] {
		if len(c) != chunkLen {
			t.Fatalf("chunk %d holds %d records, want %d", i, len(c), chunkLen)
		}
	}
}
