package invariants

import (
	"errors"
	"fmt"
	"slices"

	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"

	"github.com/vigil-run/vigil/session"
)

// Audit is what checking a log's signed checkpoints needs: the
// auditor's public keys, and anchors (checkpoints of the same log held
// elsewhere, receipts) to hold the log to.
type Audit struct {
	// Verifiers are the keys a checkpoint may be signed with.
	Verifiers note.Verifiers
	// Anchors are signed checkpoint notes the log must extend.
	Anchors [][]byte
	// Require states that the log must be signed (a store's
	// signing.require): a log with no checkpoint at all is then also
	// missing-checkpoint, at each turn/end (or as a whole without one),
	// not only unsigned.
	Require bool
}

// Findings of an audit, each named: what `vigil verify --key` reports.
const (
	// FindingUnsigned: the log holds no checkpoint at all.
	FindingUnsigned = "unsigned"
	// FindingKeyMismatch: a checkpoint is signed by no key given.
	FindingKeyMismatch = "key-mismatch"
	// FindingBadSignature: a checkpoint's signature does not verify, or
	// its note is not a checkpoint.
	FindingBadSignature = "bad-signature"
	// FindingCheckpointMismatch: a checkpoint does not state the log
	// before it (size, root, header hash or origin): the log was edited.
	FindingCheckpointMismatch = "checkpoint-mismatch"
	// FindingMissingCheckpoint: a turn/end is not followed by the
	// checkpoint every signing writer appends there, or, when the
	// configuration requires checkpoints (Audit.Require), the log holds
	// none.
	FindingMissingCheckpoint = "missing-checkpoint"
	// FindingUnsignedTail: records follow the last checkpoint.
	FindingUnsignedTail = "unsigned-tail"
	// FindingEdgeMismatch: a fork's inherited prefix is not the parent's
	// log its header's root states (session.RuleEdgeMismatch: the same
	// name `verify --tree` gives a swapped or edited child).
	FindingEdgeMismatch = session.RuleEdgeMismatch
	// FindingBrokenAnchor: an anchor does not verify, is of another log,
	// is past the log's end (the log was cut back) or states another
	// root than the log's at its size (the log was rewritten).
	FindingBrokenAnchor = "broken-anchor"
)

// Finding is one thing an audit found wrong.
type Finding struct {
	Kind string `json:"kind"`
	// Seq is the checkpoint's or record's seq, -1 when the finding is of
	// the log as a whole or of an anchor.
	Seq     int64  `json:"seq"`
	Message string `json:"message"`
}

func (f Finding) String() string {
	if f.Seq < 0 {
		return f.Kind + ": " + f.Message
	}
	return fmt.Sprintf("%s seq=%d: %s", f.Kind, f.Seq, f.Message)
}

// Integrity is what an audit established of a log.
type Integrity struct {
	// Checkpoints counts the checkpoint records; Verified those whose
	// signature verified and that state the log before them.
	Checkpoints int `json:"checkpoints"`
	Verified    int `json:"verified"`
	// Covered is the size of the last verified checkpoint's tree:
	// records 0 to Covered-1 are covered by it.
	Covered int64 `json:"covered"`
	// Keys names the keys that signed the verified checkpoints.
	Keys []string `json:"keys,omitempty"`
	// After counts the records after the last checkpoint record.
	After int64 `json:"after"`
	// Anchors counts the anchors checked and found consistent.
	Anchors int `json:"anchors"`
	// Fork is the binding of a fork's prefix: "bound" when its header's
	// parent root is the tree of its first parent.seq+1 records,
	// "not bound" for a fork whose header carries no root (made before
	// forks bound their prefix), "" when the log is no fork.
	Fork string `json:"fork,omitempty"`
	// Root is the tree hash of the whole log (every record), base64.
	Root     string    `json:"root"`
	Findings []Finding `json:"findings"`
}

// auditor checks a log's checkpoints as its lines are read.
type auditor struct {
	a       *Audit
	id      string
	header  tlog.Hash
	tree    session.MerkleTree
	out     Integrity
	anchors map[int64][]session.Checkpoint // by size
	ended   int64                          // the seq of the last turn/end not yet followed by a checkpoint, -1 none
	fork    *session.Parent                // a fork's parent until its prefix is checked, nil for any other log
	parent  *session.Parent                // a fork's parent, nil for any other log
	lastCP  int64                          // the seq of the last checkpoint record, -1 none
}

func newAuditor(a *Audit, info session.Info, headerLine []byte) *auditor {
	au := &auditor{a: a, id: info.ID, header: session.HeaderHash(headerLine), anchors: map[int64][]session.Checkpoint{}, ended: -1, lastCP: -1}
	for i, msg := range a.Anchors {
		c, ok := au.open(-1, msg, fmt.Sprintf("anchor %d", i+1), FindingBrokenAnchor)
		if !ok {
			continue
		}
		if c.Origin != session.CheckpointOrigin(info.ID) {
			au.find(FindingBrokenAnchor, -1, "anchor %d is a checkpoint of %q, not of this log", i+1, c.Origin)
			continue
		}
		au.anchors[c.Size] = append(au.anchors[c.Size], c)
	}
	if p := info.Parent; p != nil && p.Call == "" {
		au.fork, au.parent = p, p
		au.out.Fork = "not bound"
	}
	return au
}

func (au *auditor) find(kind string, seq int64, format string, args ...any) {
	au.out.Findings = append(au.out.Findings, Finding{Kind: kind, Seq: seq, Message: fmt.Sprintf(format, args...)})
}

// open verifies a signed note and parses its checkpoint, reporting
// what is wrong as kind (a key mismatch as its own finding).
func (au *auditor) open(seq int64, msg []byte, what, kind string) (session.Checkpoint, bool) {
	n, err := note.Open(msg, au.a.Verifiers)
	if err != nil {
		var unknown *note.UnverifiedNoteError
		switch {
		case errors.As(err, &unknown) && kind != FindingBrokenAnchor:
			au.find(FindingKeyMismatch, seq, "%s is signed by %s, not by a key given", what, signerNames(unknown.Note))
		default:
			if kind != FindingBrokenAnchor {
				kind = FindingBadSignature
			}
			au.find(kind, seq, "%s: %v", what, err)
		}
		return session.Checkpoint{}, false
	}
	c, err := session.ParseCheckpoint(n.Text)
	if err != nil {
		if kind != FindingBrokenAnchor {
			kind = FindingBadSignature
		}
		au.find(kind, seq, "%s: %v", what, err)
		return session.Checkpoint{}, false
	}
	if len(n.Sigs) > 0 {
		au.noteKey(n.Sigs[0].Name)
	}
	return c, true
}

func signerNames(n *note.Note) string {
	if n == nil || len(n.UnverifiedSigs) == 0 {
		return "no key"
	}
	s := fmt.Sprintf("%q", n.UnverifiedSigs[0].Name)
	for _, sig := range n.UnverifiedSigs[1:] {
		s += fmt.Sprintf(", %q", sig.Name)
	}
	return s
}

func (au *auditor) noteKey(name string) {
	for _, k := range au.out.Keys {
		if k == name {
			return
		}
	}
	au.out.Keys = append(au.out.Keys, name)
}

// line takes the next record line (without its newline) and rec, its
// record (the zero Record for a line the decoder refused).
func (au *auditor) line(seq int64, line []byte, rec session.Record) {
	au.checkAnchors()
	au.checkFork()
	if !rec.IsZero() {
		if msg, ok := session.CheckpointNote(rec); ok {
			au.checkpoint(seq, msg)
		} else if rec.Type() == session.TypeTurnEnd && !au.inherited(seq) {
			// An inherited turn/end's checkpoint is in the parent's log.
			au.missing()
			au.ended = seq
		}
	}
	au.tree.Add(line)
}

// missing reports the turn/end left without its checkpoint.
func (au *auditor) missing() {
	if au.ended >= 0 {
		au.find(FindingMissingCheckpoint, au.ended, "no checkpoint follows this turn/end")
		au.ended = -1
	}
}

// checkpoint checks the checkpoint record at seq against the log before it.
func (au *auditor) checkpoint(seq int64, msg []byte) {
	au.out.Checkpoints++
	au.lastCP = seq
	if au.ended >= 0 && au.ended != seq-1 {
		au.missing()
	}
	au.ended = -1
	c, ok := au.open(seq, msg, "the checkpoint", FindingBadSignature)
	if !ok {
		return
	}
	var bad []string
	origin, header := session.CheckpointOrigin(au.id), au.header
	if au.inherited(seq) {
		// The parent's checkpoint, inherited with its prefix: it signs the
		// same lines under the parent's origin and header line, which
		// this log does not hold.
		origin, header = session.CheckpointOrigin(au.parent.ID), c.Header
	}
	if c.Origin != origin {
		bad = append(bad, fmt.Sprintf("origin %q", c.Origin))
	}
	if c.Size != au.tree.Size() {
		bad = append(bad, fmt.Sprintf("size %d where the checkpoint stands at %d", c.Size, au.tree.Size()))
	} else if c.Root != au.tree.Root() {
		bad = append(bad, "a root that is not the tree of the records before it")
	}
	if c.Header != header {
		bad = append(bad, "a header hash that is not the header line's")
	}
	if len(bad) > 0 {
		au.find(FindingCheckpointMismatch, seq, "the signed checkpoint states %s", joinAnd(bad))
		return
	}
	au.out.Verified++
	au.out.Covered = c.Size
}

// checkAnchors checks the anchors of the tree's size.
func (au *auditor) checkAnchors() {
	cs := au.anchors[au.tree.Size()]
	if len(cs) == 0 {
		return
	}
	root := au.tree.Root()
	for _, c := range cs {
		if c.Root != root || c.Header != au.header {
			au.find(FindingBrokenAnchor, -1, "the anchor of size %d states another root or header than the log's first %d records: the log was rewritten or re-signed", c.Size, c.Size)
		} else {
			au.out.Anchors++
		}
	}
	delete(au.anchors, au.tree.Size())
}

// inherited reports whether the record at seq is of a fork's prefix.
func (au *auditor) inherited(seq int64) bool {
	return au.parent != nil && seq <= au.parent.Seq
}

// checkFork checks, once the tree holds a fork's inherited prefix, that
// its root is the one the header binds: the header is under every
// checkpoint (its hash), so an edited prefix breaks a signed root.
func (au *auditor) checkFork() {
	p := au.fork
	if p == nil || p.Root == "" || au.tree.Size() != p.Seq+1 {
		return
	}
	au.fork = nil
	if got := au.tree.Root().String(); got != p.Root {
		au.find(FindingEdgeMismatch, p.Seq, "the fork's records 0-%d have root %s, its header binds the parent %s's with %s: the inherited prefix was edited", p.Seq, got, p.ID, p.Root)
		return
	}
	au.out.Fork = "bound"
}

// finish reports what the whole log leaves: an unsigned log or tail,
// anchors past its end.
func (au *auditor) finish() *Integrity {
	au.checkAnchors()
	au.checkFork()
	if p := au.fork; p != nil && p.Root != "" {
		au.find(FindingEdgeMismatch, -1, "the fork's header binds records 0-%d of parent %s, the log holds %d: the inherited prefix was cut", p.Seq, p.ID, au.tree.Size())
	}
	au.missing()
	for size := range au.anchors {
		au.find(FindingBrokenAnchor, -1, "an anchor covers %d records, the log holds %d: the log was cut back", size, au.tree.Size())
	}
	n := au.tree.Size()
	switch {
	case au.out.Checkpoints == 0 && au.a.Require:
		// Each turn/end's checkpoint is missing: the configuration
		// requires them.
		if !slices.ContainsFunc(au.out.Findings, func(f Finding) bool { return f.Kind == FindingMissingCheckpoint }) {
			au.find(FindingMissingCheckpoint, -1, "the configuration requires checkpoints, the log holds none")
		}
		au.find(FindingUnsigned, -1, "the log holds no checkpoint")
		au.out.After = n
	case au.out.Checkpoints == 0:
		// Not a checkpoint missing after each turn: none at all.
		au.out.Findings = slices.DeleteFunc(au.out.Findings, func(f Finding) bool { return f.Kind == FindingMissingCheckpoint })
		au.find(FindingUnsigned, -1, "the log holds no checkpoint")
		au.out.After = n
	case au.lastCP < n-1:
		au.out.After = n - 1 - au.lastCP
		au.find(FindingUnsignedTail, au.lastCP+1, "%d records after the last checkpoint are signed by none", au.out.After)
	}
	au.out.Root = au.tree.Root().String()
	if au.out.Findings == nil {
		au.out.Findings = []Finding{}
	}
	return &au.out
}

func joinAnd(s []string) string {
	switch len(s) {
	case 1:
		return s[0]
	case 2:
		return s[0] + " and " + s[1]
	}
	out := ""
	for i, x := range s {
		if i == len(s)-1 {
			out += "and " + x
		} else {
			out += x + ", "
		}
	}
	return out
}
