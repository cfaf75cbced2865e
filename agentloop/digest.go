package agentloop

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"hash"
	"slices"

	"github.com/vigil-run/vigil/session"
)

// digester computes session.RequestDigest for the successive requests of
// one session without re-encoding or re-hashing the whole conversation at
// each step.
//
// The canonical encoding is {"header":H,"messages":[M,…]}, exactly what
// encoding/json produces (see session.RequestDigest). Each element of
// that array is the encoding/json encoding of the message alone, so the
// encoding of every message is kept and reused while the message at that
// position is equal to the one encoded; only new or changed messages are
// encoded. The cache is keyed by content, in keys: private copies of the
// messages encoded, which nothing outside the digester can reach, so no
// write anywhere else can make a stale encoding look current. The SHA-256
// state after the header and the messages hashed so far is kept too
// (hash.Cloner), so a step hashes only what is new since the last one, as
// long as the header and the earlier messages are the same. The bytes
// hashed are RequestDigest's, and the equivalence is tested. A header
// that encoding/json refuses falls back to session.RequestDigest itself.
//
// A digester is used by one turn at a time (the session is claimed).
type digester struct {
	keys []session.Message // private copies of the messages encoded, by position
	enc  [][]byte

	hb     []byte         // the header encoding the state starts with
	hh     session.Header // a private copy of the header hb encodes
	state  hash.Cloner    // sha256 over open, hb, mid and enc[:hashed] joined
	hashed int            // messages in state
	buf    []byte
}

var (
	digestOpen  = []byte(`{"header":`)
	digestMid   = []byte(`,"messages":[`)
	digestClose = []byte(`]}`)
	comma       = []byte(`,`)
)

// digest returns session.RequestDigest(h, msgs). It keeps nothing of h or
// msgs but copies.
func (d *digester) digest(h session.Header, msgs []session.Message) string {
	if len(d.keys) != len(d.enc) {
		// Last used by digestFrom, which keeps no keys.
		*d = digester{}
	}
	same := min(len(d.keys), len(msgs))
	for i := range same {
		if !d.keys[i].Equal(&msgs[i]) {
			same = i
			break
		}
	}
	out := d.encodeFrom(h, msgs, same)
	if d.enc == nil { // fell back
		return out
	}
	d.keys = d.keys[:same]
	for _, m := range msgs[same:] {
		m.ToolCalls = slices.Clone(m.ToolCalls)
		d.keys = append(d.keys, m)
	}
	return out
}

// digestFrom is digest for a caller that vouches that msgs[:same] equal
// the messages at those positions of the previous call: only the others
// are encoded, and only what follows the first changed one is hashed
// again. The loop vouches for its own fold, whose messages are never
// written once made (see reqView); what it hands listeners is compared
// with that fold before a request is sent.
func (d *digester) digestFrom(h session.Header, msgs []session.Message, same int) string {
	d.keys = nil // what digest compares with is no longer kept
	return d.encodeFrom(h, msgs, same)
}

// encodeFrom encodes msgs[same:] and hashes what changed.
func (d *digester) encodeFrom(h session.Header, msgs []session.Message, same int) string {
	hb := d.hb
	if hb == nil || !sameHeader(&d.hh, &h) {
		var ok bool
		if hb, ok = headerJSON(h); !ok {
			*d = digester{}
			return session.RequestDigest(h, msgs)
		}
	}
	same = min(same, len(d.enc), len(msgs))
	d.enc = d.enc[:same]
	for i := same; i < len(msgs); i++ {
		b, err := json.Marshal(&msgs[i])
		if err != nil {
			*d = digester{}
			return session.RequestDigest(h, msgs)
		}
		d.enc = append(d.enc, b)
	}
	if d.state == nil || !bytes.Equal(hb, d.hb) || same < d.hashed {
		c, ok := sha256.New().(hash.Cloner)
		if !ok {
			return d.full(hb)
		}
		d.state, d.hb, d.hh, d.hashed = c, hb, session.CloneHeader(h), 0
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
// parameters and output schema are absent.
func headerJSON(h session.Header) ([]byte, bool) {
	if s := bytes.TrimSpace(h.OutputSchema); len(h.OutputSchema) > 0 && (len(s) == 0 || string(s) == "null") {
		h.OutputSchema = nil
	}
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
