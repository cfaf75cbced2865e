//go:build unix

package invariants_test

import (
	"bytes"
	"crypto/rand"
	"syscall"
	"testing"
	"time"

	"golang.org/x/mod/sumdb/note"

	"github.com/vigil-run/vigil/invariants"
	"github.com/vigil-run/vigil/session"
)

func cpuNow() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// signedBenchLog is a signed log of at least n events, a checkpoint
// after every turn, and the audit of its key.
func signedBenchLog(tb testing.TB, n int) ([]byte, *invariants.Audit) {
	skey, vkey, err := note.GenerateKey(rand.Reader, "bench")
	if err != nil {
		tb.Fatal(err)
	}
	signer, _ := note.NewSigner(skey)
	verifier, _ := note.NewVerifier(vkey)
	b := newLogBuilder(realisticHeader())
	b.signer = signer
	for len(b.records) < n {
		b.realisticTurn()
	}
	return b.jsonl(b.id()), &invariants.Audit{Verifiers: note.VerifierList(verifier)}
}

// BenchmarkVerifyKey is `vigil verify` and `vigil verify --key` of one
// signed log of 10,000 events; cpu-ns/op is the process's CPU time.
func BenchmarkVerifyKey(b *testing.B) {
	data, audit := signedBenchLog(b, 10000)
	for _, bc := range []struct {
		name  string
		audit *invariants.Audit
	}{{"plain", nil}, {"key", audit}} {
		b.Run(bc.name, func(b *testing.B) {
			start := cpuNow()
			for b.Loop() {
				rep, err := invariants.VerifyAudited(bytes.NewReader(data), bc.audit)
				if err != nil || len(rep.Violations) > 0 || rep.Integrity != nil && len(rep.Integrity.Findings) > 0 {
					b.Fatal(err, rep.Violations, rep.Integrity)
				}
			}
			b.ReportMetric(float64(cpuNow()-start)/float64(b.N), "cpu-ns/op")
		})
	}
}

// BenchmarkSignCheckpoint is what a signing session pays per checkpoint:
// the root from the compact range, the signed note and its record.
func BenchmarkSignCheckpoint(b *testing.B) {
	skey, _, err := note.GenerateKey(rand.Reader, "bench")
	if err != nil {
		b.Fatal(err)
	}
	signer, _ := note.NewSigner(skey)
	var tree session.MerkleTree
	for i := range 1000 {
		tree.Add([]byte{byte(i), byte(i >> 8)})
	}
	info := session.Info{ID: "bench", Created: time.Now()}
	header := session.HeaderHashOf(info) // a session hashes its header once
	start := cpuNow()
	for b.Loop() {
		c := session.Checkpoint{Origin: session.CheckpointOrigin(info.ID), Size: tree.Size(), Root: tree.Root(), Header: header}
		msg, err := session.SignCheckpoint(c, signer)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := session.NewRecord(tree.Size(), info.Created, session.CheckpointEvent(msg)); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(cpuNow()-start)/float64(b.N), "cpu-ns/op")
}
