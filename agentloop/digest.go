package agentloop

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"hash"

	"github.com/vigil-run/vigil/session"
)

// digester computes session.RequestDigest for the successive requests of
// one session without re-encoding or re-hashing the whole conversation at
// each step.
//
// The canonical encoding is {"header":H,"messages":[M,…]}, exactly what
// encoding/json produces (see session.RequestDigest). Each element of
// that array is the encoding/json encoding of the message alone, so the
// encoding of every message is kept, by position, and reused while the
// message at that position is unchanged; only new or changed messages are
// encoded. The SHA-256 state after the header and the messages hashed so
// far is kept too (hash.Cloner), so a step hashes only what is new since
// the last one, as long as the header and the earlier messages are the
// same. The bytes hashed are RequestDigest's, and the equivalence is
// tested. A header that encoding/json refuses falls back to
// session.RequestDigest itself.
//
// A digester is used by one turn at a time (the session is claimed).
type digester struct {
	msgs []session.Message // the fold last encoded (shared, read-only)
	enc  [][]byte

	hb     []byte      // the header encoding the state starts with
	state  hash.Cloner // sha256 over open, hb, mid and enc[:hashed] joined
	hashed int         // messages in state
	buf    []byte
}

var (
	digestOpen  = []byte(`{"header":`)
	digestMid   = []byte(`,"messages":[`)
	digestClose = []byte(`]}`)
	comma       = []byte(`,`)
)

// digest returns session.RequestDigest(h, msgs). msgs must not change
// afterwards (a session's fold never does): the digester keeps it.
func (d *digester) digest(h session.Header, msgs []session.Message) string {
	hb, ok := headerJSON(h)
	if !ok {
		return session.RequestDigest(h, msgs)
	}
	if len(d.enc) > len(msgs) {
		d.enc = d.enc[:len(msgs)]
		d.msgs = d.msgs[:len(msgs)]
	}
	// A session's fold only ever grows in place (a replace makes a new
	// slice), so when msgs starts where the last fold did, the messages
	// seen then are unchanged and need no comparison. d.msgs keeps that
	// array alive, so a new fold cannot be allocated at its address.
	from := 0
	if len(d.msgs) > 0 && len(msgs) >= len(d.msgs) && &d.msgs[0] == &msgs[0] {
		from = len(d.msgs)
	}
	changed := len(msgs) // the first position whose encoding changed
	for i := from; i < len(msgs); i++ {
		if i < len(d.msgs) && d.msgs[i].Equal(&msgs[i]) {
			continue
		}
		b, err := json.Marshal(&msgs[i])
		if err != nil {
			*d = digester{}
			return session.RequestDigest(h, msgs)
		}
		changed = min(changed, i)
		if i < len(d.enc) {
			d.enc[i] = b
		} else {
			d.enc = append(d.enc, b)
		}
	}
	d.msgs = msgs
	if d.state == nil || !bytes.Equal(hb, d.hb) || changed < d.hashed || d.hashed > len(d.enc) {
		c, ok := sha256.New().(hash.Cloner)
		if !ok {
			return d.full(hb)
		}
		d.state, d.hb, d.hashed = c, hb, 0
		d.state.Write(digestOpen)
		d.state.Write(hb)
		d.state.Write(digestMid)
	}
	for ; d.hashed < len(d.enc); d.hashed++ {
		if d.hashed > 0 {
			d.state.Write(comma)
		}
		d.state.Write(d.enc[d.hashed])
	}
	final, err := d.state.Clone()
	if err != nil {
		d.state = nil
		return d.full(hb)
	}
	final.Write(digestClose)
	d.buf = final.Sum(d.buf[:0])
	return hex.EncodeToString(d.buf)
}

// full hashes the whole encoding from scratch.
func (d *digester) full(hb []byte) string {
	h := sha256.New()
	h.Write(digestOpen)
	h.Write(hb)
	h.Write(digestMid)
	for i, b := range d.enc {
		if i > 0 {
			h.Write(comma)
		}
		h.Write(b)
	}
	h.Write(digestClose)
	d.buf = h.Sum(d.buf[:0])
	return hex.EncodeToString(d.buf)
}

// headerJSON encodes h as session.RequestDigest does: empty or null tool
// parameters are absent.
func headerJSON(h session.Header) ([]byte, bool) {
	for i, t := range h.Tools {
		if s := bytes.TrimSpace(t.Parameters); len(s) == 0 || string(s) == "null" {
			if len(t.Parameters) > 0 {
				h.Tools = append([]session.ToolSpec(nil), h.Tools...)
				h.Tools[i].Parameters = nil
			}
		}
	}
	b, err := json.Marshal(h)
	return b, err == nil
}
