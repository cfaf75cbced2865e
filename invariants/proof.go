package invariants

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"

	"github.com/vigil-run/vigil/session"
)

// ProofVersion is the version of the turn proof format this package
// writes and reads (docs/log-format.md, "Turn proofs").
const ProofVersion = 1

// TurnProof shows one turn of a signed log, and nothing else of it: the
// turn's lines, each with its inclusion proof in the tree a signed
// checkpoint states. It is the JSON file `vigil prove` writes.
type TurnProof struct {
	Version int    `json:"version"`
	Session string `json:"session"`
	Turn    int    `json:"turn"`
	// Header is the SHA-256 of the log's header line, base64: the
	// checkpoint binds it; the header itself is not shown.
	Header string `json:"header"`
	// Checkpoint is the signed note the lines are proved against.
	Checkpoint string `json:"checkpoint"`
	// Lines are the turn's lines, seqs consecutive, from its turn/start
	// to its last record (ignorable records between them included).
	Lines []ProvedLine `json:"lines"`
}

// ProvedLine is one canonical record line and its inclusion proof.
type ProvedLine struct {
	Seq  int64  `json:"seq"`
	Line string `json:"line"`
	// Proof is the RFC 6962 inclusion proof of the line's leaf in the
	// checkpoint's tree (tlog.RecordProof), each hash base64.
	Proof []string `json:"proof"`
}

// Reasons a proof is refused: ProofError.Reason.
const (
	ProofMalformed      = "malformed"          // not a version-1 proof, or a line that is not a record
	ProofKeyMismatch    = "key-mismatch"       // the checkpoint is signed by no key given
	ProofBadSignature   = "bad-signature"      // the checkpoint's signature or text does not verify
	ProofWrongSession   = "wrong-session"      // the checkpoint is of another session
	ProofHeaderMismatch = "header-mismatch"    // the checkpoint binds another header hash
	ProofNotCovered     = "not-covered"        // a line's seq is past the checkpoint's size
	ProofInclusion      = "inclusion-mismatch" // a line or a proof hash is not what the tree holds
	ProofWrongTurn      = "wrong-turn"         // a line is of another turn, or not where it claims
	ProofIncomplete     = "incomplete"         // lines missing: seqs not consecutive, or no turn/start first
	ProofNoCheckpoint   = "no-checkpoint"      // (proving) no checkpoint covers the turn
	ProofNoTurn         = "no-turn"            // (proving) the log has no such turn
)

// ProofError is why a turn proof is refused, or cannot be made.
type ProofError struct {
	Reason string
	Seq    int64 // the line's seq, -1 for the proof as a whole
	Err    error
}

func (e *ProofError) Error() string {
	if e.Seq >= 0 {
		return fmt.Sprintf("%s: seq %d: %v", e.Reason, e.Seq, e.Err)
	}
	return fmt.Sprintf("%s: %v", e.Reason, e.Err)
}

func (e *ProofError) Unwrap() error { return e.Err }

func proofErr(reason string, seq int64, format string, args ...any) error {
	return &ProofError{Reason: reason, Seq: seq, Err: fmt.Errorf(format, args...)}
}

// turnsSpan says which turns a log has, for a "no such turn" error.
func turnsSpan(n int) string {
	switch n {
	case 0:
		return "it has none"
	case 1:
		return "it has turn 1"
	}
	return fmt.Sprintf("its turns are 1-%d", n)
}

// ProofReason returns the reason of a *ProofError in err's chain, "" else.
func ProofReason(err error) string {
	var pe *ProofError
	if errors.As(err, &pe) {
		return pe.Reason
	}
	return ""
}

// ProveTurn reads a JSONL log and proves its turn: the turn's lines
// against the first checkpoint record after them (the turn's end or
// suspension checkpoint). It checks no signature: the verifier does.
func ProveTurn(r io.Reader, turn int) (*TurnProof, error) { return ProveTurnAt(r, turn, -1) }

// ProveTurnAt is [ProveTurn] against the checkpoint record at seq at,
// which must come after the turn's last record; -1 is the first such.
func ProveTurnAt(r io.Reader, turn int, at int64) (*TurnProof, error) {
	head, lines, err := readLines(r)
	if err != nil {
		return nil, err
	}
	info, err := session.DecodeHeader(head)
	if err != nil {
		return nil, &session.CorruptError{Line: 1, Err: err}
	}
	first, last, turns := int64(-1), int64(-1), 0
	recs := make([]session.Record, len(lines))
	for seq, line := range lines {
		if recs[seq], err = session.DecodeRecord(line); err != nil {
			return nil, &session.CorruptError{Line: seq + 2, Err: err}
		}
		turns = max(turns, recs[seq].Turn())
		if recs[seq].Turn() == turn && !recs[seq].Ignorable() {
			if first < 0 {
				first = int64(seq)
			}
			last = int64(seq)
		}
	}
	// The first checkpoint after the turn's last record: its own end or
	// suspension checkpoint, or a later one.
	var cp []byte
	for _, rec := range recs[last+1:] {
		if msg, ok := session.CheckpointNote(rec); ok && last >= 0 && (at < 0 || rec.Seq() == at) {
			cp = msg
			break
		}
	}
	if first < 0 {
		return nil, proofErr(ProofNoTurn, -1, "session %s has no turn %d (%s)", info.ID, turn, turnsSpan(turns))
	}
	if cp == nil {
		return nil, proofErr(ProofNoCheckpoint, -1, "no signed checkpoint follows turn %d's last record (seq %d)", turn, last)
	}
	size := checkpointSize(cp)
	if size <= last {
		return nil, proofErr(ProofNoCheckpoint, -1, "the checkpoint after turn %d covers %d records, not seq %d", turn, size, last)
	}
	hashes, err := storedHashes(lines[:size])
	if err != nil {
		return nil, err
	}
	p := &TurnProof{Version: ProofVersion, Session: info.ID, Turn: turn, Header: session.HeaderHash(head).String(), Checkpoint: string(cp)}
	for seq := first; seq <= last; seq++ {
		rp, err := tlog.ProveRecord(size, seq, hashes)
		if err != nil {
			return nil, fmt.Errorf("prove: seq %d: %w", seq, err)
		}
		pl := ProvedLine{Seq: seq, Line: string(lines[seq]), Proof: make([]string, len(rp))}
		for i, h := range rp {
			pl.Proof[i] = h.String()
		}
		p.Lines = append(p.Lines, pl)
	}
	return p, nil
}

// checkpointSize is the size a checkpoint note states, -1 when its text
// is not a checkpoint.
func checkpointSize(msg []byte) int64 {
	text, _, ok := bytes.Cut(msg, []byte("\n\n"))
	if !ok {
		return -1
	}
	c, err := session.ParseCheckpoint(string(text) + "\n")
	if err != nil {
		return -1
	}
	return c.Size
}

// storedHashes are the tree's stored hashes over lines (tlog.StoredHashes).
func storedHashes(lines [][]byte) (tlog.HashReaderFunc, error) {
	var all []tlog.Hash
	read := tlog.HashReaderFunc(func(idx []int64) ([]tlog.Hash, error) {
		out := make([]tlog.Hash, len(idx))
		for i, x := range idx {
			if x < 0 || x >= int64(len(all)) {
				return nil, fmt.Errorf("stored hash %d not made", x)
			}
			out[i] = all[x]
		}
		return out, nil
	})
	for n, line := range lines {
		hs, err := tlog.StoredHashesForRecordHash(int64(n), session.LeafHash(line), read)
		if err != nil {
			return nil, err
		}
		all = append(all, hs...)
	}
	return read, nil
}

func readLines(r io.Reader) (head []byte, lines [][]byte, _ error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 1<<16), 1<<30)
	for sc.Scan() {
		line := bytes.Clone(sc.Bytes())
		if head == nil {
			head = line
			continue
		}
		lines = append(lines, line)
	}
	if err := sc.Err(); err != nil {
		return nil, nil, err
	}
	if head == nil {
		return nil, nil, &session.CorruptError{Line: 1, Err: fmt.Errorf("%w: empty log", session.ErrMalformed)}
	}
	return head, lines, nil
}

// DecodeTurnProof reads a proof file: JSON, version 1, unknown fields
// refused.
func DecodeTurnProof(data []byte) (*TurnProof, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var p TurnProof
	if err := dec.Decode(&p); err != nil {
		return nil, proofErr(ProofMalformed, -1, "%v", err)
	}
	if dec.More() {
		return nil, proofErr(ProofMalformed, -1, "data after the proof")
	}
	if p.Version != ProofVersion {
		return nil, proofErr(ProofMalformed, -1, "version %d, want %d", p.Version, ProofVersion)
	}
	if len(p.Lines) == 0 {
		return nil, proofErr(ProofMalformed, -1, "no lines")
	}
	return &p, nil
}

// ProvenTurn is what a verified proof establishes.
type ProvenTurn struct {
	Session string
	Turn    int
	// Key names the key that signed the checkpoint.
	Key string
	// Checkpoint is what the signed checkpoint states.
	Checkpoint session.Checkpoint
	// Records are the proved lines, decoded.
	Records []session.Record
	// Ended is whether the last line is the turn's turn/end.
	Ended bool
}

// VerifyTurnProof checks p alone with the auditor's keys: the
// checkpoint's signature and statement, then every line's inclusion in
// its tree, its seq and turn, and that no line of the turn is left out
// between its turn/start and its last line. A refusal is a *ProofError.
func VerifyTurnProof(p *TurnProof, keys note.Verifiers) (*ProvenTurn, error) {
	c, key, err := openProofCheckpoint(p, keys)
	if err != nil {
		return nil, err
	}
	out := &ProvenTurn{Session: p.Session, Turn: p.Turn, Key: key, Checkpoint: c}
	for _, pl := range p.Lines {
		if pl.Seq < 0 || pl.Seq >= c.Size {
			return nil, proofErr(ProofNotCovered, pl.Seq, "the checkpoint covers seqs 0 to %d", c.Size-1)
		}
	}
	for i, pl := range p.Lines {
		rec, err := checkProvedLine(c, pl)
		if err != nil {
			return nil, err
		}
		switch {
		case rec.Turn() != p.Turn && !(rec.Ignorable() && rec.Turn() == 0):
			return nil, proofErr(ProofWrongTurn, pl.Seq, "a line of turn %d in a proof of turn %d", rec.Turn(), p.Turn)
		case i > 0 && pl.Seq != p.Lines[i-1].Seq+1:
			return nil, proofErr(ProofIncomplete, pl.Seq, "follows seq %d: lines left out", p.Lines[i-1].Seq)
		case i == 0 && rec.Type() != session.TypeTurnStart:
			return nil, proofErr(ProofIncomplete, pl.Seq, "the first line is %s, not the turn's turn/start", rec.Type())
		}
		out.Records = append(out.Records, rec)
	}
	last := out.Records[len(out.Records)-1]
	out.Ended = last.Type() == session.TypeTurnEnd
	return out, nil
}

// openProofCheckpoint verifies the proof's checkpoint note and that it
// states this session and header.
func openProofCheckpoint(p *TurnProof, keys note.Verifiers) (session.Checkpoint, string, error) {
	n, err := note.Open([]byte(p.Checkpoint), keys)
	if err != nil {
		var unknown *note.UnverifiedNoteError
		if errors.As(err, &unknown) {
			return session.Checkpoint{}, "", proofErr(ProofKeyMismatch, -1, "the checkpoint is signed by %s, not by a key given", signerNames(unknown.Note))
		}
		return session.Checkpoint{}, "", proofErr(ProofBadSignature, -1, "the checkpoint: %v", err)
	}
	c, err := session.ParseCheckpoint(n.Text)
	if err != nil {
		return session.Checkpoint{}, "", proofErr(ProofBadSignature, -1, "the checkpoint: %v", err)
	}
	if c.Origin != session.CheckpointOrigin(p.Session) {
		return session.Checkpoint{}, "", proofErr(ProofWrongSession, -1, "the checkpoint is of %q, the proof of session %s", c.Origin, p.Session)
	}
	if c.Header.String() != p.Header {
		return session.Checkpoint{}, "", proofErr(ProofHeaderMismatch, -1, "the checkpoint binds header %s, the proof states %s", c.Header, p.Header)
	}
	return c, n.Sigs[0].Name, nil
}

// checkProvedLine checks one line: its inclusion at its seq in c's tree,
// and that it is the record of that seq.
func checkProvedLine(c session.Checkpoint, pl ProvedLine) (session.Record, error) {
	proof := make(tlog.RecordProof, len(pl.Proof))
	for i, s := range pl.Proof {
		b, err := base64.StdEncoding.DecodeString(s)
		if err != nil || len(b) != tlog.HashSize {
			return session.Record{}, proofErr(ProofMalformed, pl.Seq, "proof hash %d is not a base64 SHA-256", i)
		}
		copy(proof[i][:], b)
	}
	if err := tlog.CheckRecord(proof, c.Size, c.Root, pl.Seq, session.LeafHash([]byte(pl.Line))); err != nil {
		return session.Record{}, proofErr(ProofInclusion, pl.Seq, "the line is not the checkpoint tree's leaf %d: %v", pl.Seq, err)
	}
	rec, err := session.DecodeRecord([]byte(pl.Line))
	if err != nil {
		return session.Record{}, proofErr(ProofMalformed, pl.Seq, "%v", err)
	}
	if rec.Seq() != pl.Seq {
		return session.Record{}, proofErr(ProofWrongTurn, pl.Seq, "the line states seq %d", rec.Seq())
	}
	return rec, nil
}
