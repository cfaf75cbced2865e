//go:build unix

package invariants_test

import (
	"crypto/ed25519"
	"crypto/rand"
	"testing"
)

// BenchmarkSignBareEd25519 is the floor BenchmarkSignCheckpoint is held
// to: one ed25519.Sign of a checkpoint-sized text, in CPU time.
func BenchmarkSignBareEd25519(b *testing.B) {
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		b.Fatal(err)
	}
	msg := make([]byte, 160)
	start := cpuNow()
	for b.Loop() {
		_ = ed25519.Sign(priv, msg)
	}
	b.ReportMetric(float64(cpuNow()-start)/float64(b.N), "cpu-ns/op")
}
