package invariants_test

import (
	"testing"

	"github.com/vigil-run/vigil/internal/cputime"
	"github.com/vigil-run/vigil/invariants"
	"github.com/vigil-run/vigil/session"
)

// BenchmarkColdOpenParts splits BenchmarkColdOpen's log (about 10,000
// events) into what an open does to it: decode (validation and fold
// included), and the decode with the plugin's check in its pass.
func BenchmarkColdOpenParts(b *testing.B) {
	lb := newLogBuilder(realisticHeader())
	for len(lb.records) < 10_000 {
		lb.realisticTurn()
	}
	data := lb.jsonl("cold")
	n := float64(len(lb.records))
	b.Run("decode", func(b *testing.B) {
		b.ReportAllocs()
		c0 := cputime.Now()
		for b.Loop() {
			if _, err := session.DecodeOwned(data); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(cputime.Now()-c0)/float64(b.N)/n, "cpu-ns/event")
	})
	b.Run("decode+check", func(b *testing.B) {
		b.ReportAllocs()
		c0 := cputime.Now()
		for b.Loop() {
			add, violation := invariants.NewReplayer()
			if _, err := session.DecodeOwnedEach(data, add); err != nil {
				b.Fatal(err)
			}
			if v := violation(); v != nil {
				b.Fatal(v)
			}
		}
		b.ReportMetric(float64(cputime.Now()-c0)/float64(b.N)/n, "cpu-ns/event")
	})
}
