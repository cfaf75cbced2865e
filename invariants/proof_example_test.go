package invariants_test

import (
	"bytes"
	"crypto/rand"
	"encoding/json"
	"fmt"

	"golang.org/x/mod/sumdb/note"

	"github.com/vigil-run/vigil/invariants"
	"github.com/vigil-run/vigil/session"
)

// The operator proves turn 1 of a signed log; a third party, holding
// only the proof and the public key, checks it.
func ExampleVerifyTurnProof() {
	skey, vkey, _ := note.GenerateKey(rand.Reader, "vigil-audit-example")
	signer, _ := note.NewSigner(skey)
	b := newLogBuilder(session.Header{Model: "m"})
	b.signer = signer // a checkpoint after every turn/end, as a signing session writes
	b.turnWith("hi", stepSpec{chunks: []string{"hello"}})
	b.turnWith("and now?", stepSpec{chunks: []string{"still here"}})

	p, err := invariants.ProveTurn(bytes.NewReader(b.jsonl(b.id())), 1)
	if err != nil {
		fmt.Println(err)
		return
	}
	file, _ := json.Marshal(p) // what vigil prove writes

	verifier, _ := note.NewVerifier(vkey)
	proof, err := invariants.DecodeTurnProof(file)
	if err != nil {
		fmt.Println(err)
		return
	}
	got, err := invariants.VerifyTurnProof(proof, note.VerifierList(verifier))
	if err != nil {
		fmt.Println("refused:", invariants.ProofReason(err))
		return
	}
	fmt.Printf("turn %d of %s: %d lines, ended %v, signed by %s\n", got.Turn, got.Session, len(got.Records), got.Ended, got.Key)

	proof.Lines[1].Line = string(bytes.Replace([]byte(proof.Lines[1].Line), []byte("hi"), []byte("yo"), 1))
	_, err = invariants.VerifyTurnProof(proof, note.VerifierList(verifier))
	fmt.Println("edited:", invariants.ProofReason(err))
	// Output:
	// turn 1 of signed: 9 lines, ended true, signed by vigil-audit-example
	// edited: inclusion-mismatch
}
