package server

import (
	"errors"
	"fmt"

	"golang.org/x/mod/sumdb/note"

	"github.com/vigil-run/vigil/invariants"
	"github.com/vigil-run/vigil/session"
)

// CheckpointInfo says whether a signed checkpoint (integrity/checkpoint)
// covers a seq of a log.
type CheckpointInfo struct {
	// Signed: a checkpoint record after the seq states a tree that holds
	// it. Covered: that checkpoint covers the seq and, when the server
	// has checkpoint keys, verifies against them.
	Signed  bool `json:"signed"`
	Covered bool `json:"covered"`
	// Verified: the server checked the checkpoint's signature against its
	// keys, and the tree it states against the log before it. False when
	// the server has no keys (the checkpoint is then unverified here).
	Verified bool `json:"verified"`
	// CheckpointSeq is the checkpoint record's seq and TreeSize the size
	// of the tree it states (-1 and 0 when none covers the seq).
	CheckpointSeq int64 `json:"checkpoint_seq"`
	TreeSize      int64 `json:"tree_size"`
	// Key names the key that signed it: its name and key hash
	// ("vigil-audit-2026+1a2b3c4d"), "" when none did.
	Key string `json:"key"`
}

// coverage finds the first checkpoint after seq whose tree holds seq,
// and, with the server's keys, whether the audit of the log verified it.
func (s *Server) coverage(st *stored, seq int64) CheckpointInfo {
	out := CheckpointInfo{CheckpointSeq: -1}
	for _, r := range st.log.Records[seq+1:] {
		msg, ok := session.CheckpointNote(r)
		if !ok {
			continue
		}
		n := readNote(msg)
		if n == nil {
			continue
		}
		c, err := session.ParseCheckpoint(n.Text)
		if err != nil || c.Size <= seq || c.Origin != session.CheckpointOrigin(st.log.Info.ID) {
			continue
		}
		out.Signed, out.Covered, out.CheckpointSeq, out.TreeSize = true, true, r.Seq(), c.Size
		if sigs := append(n.Sigs, n.UnverifiedSigs...); len(sigs) > 0 {
			out.Key = fmt.Sprintf("%s+%08x", sigs[0].Name, sigs[0].Hash)
		}
		break
	}
	if out.Signed && st.rep.Integrity != nil {
		out.Verified = verified(st.rep.Integrity, out.CheckpointSeq, out.TreeSize)
		out.Covered = out.Verified
	}
	return out
}

// verified: the audit verified checkpoints up to a tree of size or more,
// and found nothing wrong with any checkpoint up to the one at seq.
func verified(in *invariants.Integrity, seq, size int64) bool {
	if in.Covered < size {
		return false
	}
	for _, f := range in.Findings {
		switch f.Kind {
		case invariants.FindingBadSignature, invariants.FindingKeyMismatch, invariants.FindingCheckpointMismatch, invariants.FindingEdgeMismatch:
			if f.Seq <= seq {
				return false
			}
		}
	}
	return true
}

// readNote opens a signed note without checking its signature (the
// audit does that): nil when msg is no note.
func readNote(msg []byte) *note.Note {
	_, err := note.Open(msg, note.VerifierList())
	var unknown *note.UnverifiedNoteError
	if errors.As(err, &unknown) {
		return unknown.Note
	}
	return nil
}
