package agentsrv

import (
	"context"
	"fmt"
	"strings"

	"github.com/vigil-run/vigil"
	"github.com/vigil-run/vigil/session"
)

// Receipt is what an answer over a protocol says of where it comes from,
// so the caller can check it: `vigil verify` on the session (with --key
// and the checkpoint as --anchor where the log is signed), or the API's
// /verify.
type Receipt struct {
	// Session is the session the turn ran in.
	Session string `json:"session"`
	// Turn is the turn's number in it.
	Turn int `json:"turn"`
	// Seq is the seq of the last record of the turn as answered: its
	// turn/end, or the last record before it waits for approvals.
	Seq int64 `json:"seq"`
	// RequestDigest is the sha256 of the turn's last request/digest: the
	// model request whose reply is the answer ("" when the turn asked
	// the model nothing).
	RequestDigest string `json:"request_digest,omitempty"`
	// Checkpoint is the signed checkpoint note the turn ended (or
	// suspended) with, where the log is signed.
	Checkpoint string `json:"checkpoint,omitempty"`
}

// MetaKey is the _meta key (MCP) and metadata key (A2A) of the receipt.
const MetaKey = "vigil/receipt"

// ReceiptOf reads the receipt of turn result res from its session's
// stored log: the end of the log when the turn is the last, else the
// whole log.
func ReceiptOf(ctx context.Context, rt *vigil.Runtime, res *vigil.Result) (Receipt, error) {
	r := Receipt{Session: res.Session, Turn: res.Turn, Seq: -1, Checkpoint: res.Checkpoint}
	mgr, err := rt.Manager()
	if err != nil {
		return r, err
	}
	tail, err := session.LoadTail(ctx, mgr.Store(), res.Session)
	if err != nil {
		return r, fmt.Errorf("agentsrv: receipt: %w", err)
	}
	records := tail.Records
	if len(records) == 0 || records[0].Turn() > res.Turn {
		// Another turn began since: read the turn from the whole log.
		log, err := rt.Session(ctx, res.Session)
		if err != nil {
			return r, fmt.Errorf("agentsrv: receipt: %w", err)
		}
		records = log.Records
	}
	for _, rec := range records {
		if rec.Turn() != res.Turn || rec.Type() == session.TypeCheckpoint {
			continue
		}
		r.Seq = rec.Seq()
		if rec.Type() == session.TypeRequestDigest {
			d, err := session.DecodeData[session.Digest](rec)
			if err != nil {
				return r, fmt.Errorf("agentsrv: receipt: %w", err)
			}
			r.RequestDigest = d.SHA256
		}
	}
	if r.Seq < 0 {
		return r, fmt.Errorf("agentsrv: receipt: session %s has no turn %d", res.Session, res.Turn)
	}
	if r.Checkpoint == "" {
		r.Checkpoint = checkpointOf(records, r.Seq)
	}
	return r, nil
}

// checkpointOf is the note of the first signed checkpoint in records
// that covers seq: the one the turn ended or suspended with, read from
// the log by a process that did not run the turn (a worker did). "" when
// none does (the log is not signed).
func checkpointOf(records []session.Record, seq int64) string {
	for _, rec := range records {
		if rec.Seq() <= seq {
			continue
		}
		msg, ok := session.CheckpointNote(rec)
		if !ok {
			continue
		}
		if c, err := session.ParseCheckpoint(noteText(string(msg))); err == nil && c.Size > seq {
			return string(msg)
		}
	}
	return ""
}

// noteText is the text of a signed note: what comes before the blank
// line that starts its signatures.
func noteText(msg string) string {
	if i := strings.Index(msg, "\n\n"); i >= 0 {
		return msg[:i+1]
	}
	return msg
}
