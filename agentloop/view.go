package agentloop

import (
	"fmt"
	"slices"

	"github.com/vigil-run/vigil/session"
	"github.com/vigil-run/vigil/session/live"
)

// reqView is what the loop keeps of one session between its steps, so
// that building a request costs what changed since the last one, not the
// length of the conversation or of the log.
//
// fold is the loop's own fold of the log (a session.Fold fed with the
// records the loop has not folded yet): the messages a seal owns. A
// request carries a read-only view of it ([session.Fold.View]), shared by
// the seal, the listeners and the provider, none of which can write it;
// and the fold never writes a message it made (see [session.Fold]). So
// the view is handed out as it is, without a copy and without a check
// that nobody wrote it. hdrs holds the copies of the header the
// listeners and the provider are handed (see handedHeaders). After a
// refused or failed dispatch the view is dropped and built again.
type reqView struct {
	n    int            // records folded: seqs 0..n-1
	last session.Record // record n-1, to tell that the log is another
	fold session.Fold

	hdrs handedHeaders
	// same is how many leading messages of the fold are unchanged since
	// the last request (see digester.digestFrom); spliced says a replace
	// was folded since.
	same    int
	spliced bool

	// hdrRec is the latest request/header record the view saw; hdr is
	// its header (owned, for the seal), derived once per record (hdrOf),
	// and hdrs the listeners' and the provider's copies of it.
	hdrRec, hdrOf session.Record
	hdr           session.Header

	scratch []session.Record // catchUp's, kept for its capacity
}

// catchUp folds the session's records before seq upto that the view has
// not folded yet. It reads only those records (from the end of the log);
// a log that does not continue what was folded is folded from scratch.
func (v *reqView) catchUp(sess *live.Session, upto int64) error {
	tail, ok := since(v.scratch[:0], sess, v.n, v.last, upto)
	if !ok {
		*v = reqView{}
		tail, _ = since(tail[:0], sess, 0, session.Record{}, upto)
	}
	defer func() { v.scratch = keepScratch(tail) }()
	for _, r := range tail {
		if err := v.fold.Add(r); err != nil {
			*v = reqView{}
			return fmt.Errorf("agentloop: fold the log: %w", err)
		}
		if r.Surface().Op == session.OpReplace {
			v.spliced = true
		}
		if r.Type() == session.TypeRequestHeader {
			v.hdrRec = r
		}
		v.n, v.last = v.n+1, r
	}
	return nil
}

// since returns, in seq order, the records of sess from seq n up to
// before seq upto, reading only those (from the end of the log), appended
// to dst. ok is false when record n-1 is not last: the log is not the one
// read before.
func since(dst []session.Record, sess *live.Session, n int, last session.Record, upto int64) (tail []session.Record, ok bool) {
	tail, ok = dst, n == 0
	for r := range sess.Backward() {
		if r.Seq() >= upto {
			continue
		}
		if r.Seq() < int64(n) {
			ok = r.Seq() == int64(n-1) && r == last
			break
		}
		tail = append(tail, r)
	}
	slices.Reverse(tail[len(dst):])
	return tail, ok
}

// request returns the fold (owned: for the seal and the digest), the
// read-only view of it to hand out, and how many leading messages are
// unchanged since the previous request.
func (v *reqView) request() (own []session.Message, view session.Messages, same int) {
	own, view = v.fold.Messages(), v.fold.View()
	if v.spliced || v.same > len(own) {
		v.same, v.spliced = 0, false
	}
	same, v.same = v.same, len(own)
	return own, view, same
}

// sawHeader notes r, a request/header record the loop appended after the
// records folded so far.
func (v *reqView) sawHeader(r session.Record) { v.hdrRec = r }

// header returns the latest logged request header the view saw, as
// [live.Session.Header] would: the seal's own copy, made once per header
// record, like the copies in hdrs. The seal compares the listeners' copy
// with its own at every request, and a refusal drops the view; the
// handoff renews the provider's when it differs: so the copies are kept
// from step to step.
func (v *reqView) header() (session.Header, bool) {
	if v.hdrRec.IsZero() {
		return session.Header{}, false
	}
	if v.hdrOf != v.hdrRec {
		v.hdr, _ = session.DeriveHeader([]session.Record{v.hdrRec})
		v.hdrs = handedHeaders{lis: session.CloneHeader(v.hdr), prov: session.CloneHeader(v.hdr)}
		v.hdrOf = v.hdrRec
	}
	return v.hdr, true
}

// keepScratch returns buf emptied for reuse, or nil when it grew large
// (the first read of a long log), so a view does not keep that capacity.
func keepScratch(buf []session.Record) []session.Record {
	clear(buf)
	if cap(buf) > 256 {
		return nil
	}
	return buf[:0]
}
