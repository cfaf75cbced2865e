package agentloop

import (
	"bytes"
	"slices"
	"unsafe"

	"github.com/vigil-run/vigil/session"
)

// handouts are the two copies of a session's step requests the loop
// hands out, kept between steps: the listeners' (every llm/stream
// listener is handed it) and the provider's. Each is its own, so what one
// side writes reaches neither the other side nor the loop's fold, and a
// write to either is found before it could count: the seal's check finds
// the listeners' (sealedFallback), the handoff the provider's (renew).
type handouts struct {
	lis, prov handedCopy
}

// handedCopy is a copy of a session's step requests that the loop hands
// out: the messages, kept between steps and grown with each step's new
// messages, and the means to prove at memory speed that nobody wrote it
// since.
//
// msgs share their strings with the loop's fold (strings cannot be
// written) and have tool-call arrays of their own, in calls, so no write
// to the copy reaches the fold. snap is a byte-for-byte copy of msgs, and
// each chunk of calls has one too; nothing handed out reaches either, and
// being bytes, they keep nothing alive and cost the collector nothing. So
// while msgs and calls still hold the bytes of their snapshots, the copy
// equals what it was copied from, which the loop never writes (see
// reqView): one comparison of a few contiguous arrays, instead of a walk
// of the conversation message by message, proves the copy untouched.
type handedCopy struct {
	msgs  []session.Message // handed out as msgs[:n:n], so appends cannot reach the rest
	snap  []byte            // msgs' bytes
	calls []callChunk
	// header is this copy of the request header (see reqView.header),
	// compared field by field with the seal's own.
	header session.Header
}

// callChunk holds the tool calls of some of the copy's messages. Its
// arrays are allocated once, at their final capacity, so the messages'
// ToolCalls stay pointing into them as the copy grows.
type callChunk struct {
	live []session.ToolCall
	snap []byte // live's bytes
}

// add appends copies of ms.
func (c *handedCopy) add(ms []session.Message) {
	if len(ms) == 0 {
		return
	}
	// Doubling, so that the array handed out changes seldom: the
	// invariants plugin compares again only what is new in an array it
	// checked before.
	c.msgs = growCap(c.msgs, len(ms))
	at := len(c.msgs)
	for _, m := range ms {
		if len(m.ToolCalls) > 0 {
			m.ToolCalls = c.addCalls(m.ToolCalls)
		} else {
			m.ToolCalls = m.ToolCalls[:0:0] // nothing to append into
		}
		c.msgs = append(c.msgs, m)
	}
	added := bytesOf(c.msgs[at:])
	c.snap = append(growCap(c.snap, len(added)), added...)
}

// addCalls copies tcs into the current chunk, or a new one, and returns
// the copy, capped.
func (c *handedCopy) addCalls(tcs []session.ToolCall) []session.ToolCall {
	n := len(c.calls)
	if n == 0 || cap(c.calls[n-1].live)-len(c.calls[n-1].live) < len(tcs) {
		size := 32
		if n > 0 {
			size = 2 * cap(c.calls[n-1].live)
		}
		size = max(size, len(tcs))
		c.calls = append(c.calls, callChunk{live: make([]session.ToolCall, 0, size),
			snap: make([]byte, 0, size*int(unsafe.Sizeof(session.ToolCall{})))})
		n++
	}
	ch := &c.calls[n-1]
	at := len(ch.live)
	ch.live = append(ch.live, tcs...)
	ch.snap = append(ch.snap, bytesOf(ch.live[at:])...)
	return ch.live[at:len(ch.live):len(ch.live)]
}

// unwritten reports whether got is the copy as handed out and every byte
// of the copy is as it was made. false says only that the fast proof
// failed: an equal value written back also fails it.
func (c *handedCopy) unwritten(got []session.Message) bool {
	if len(got) != len(c.msgs) || len(got) > 0 && &got[0] != &c.msgs[0] {
		return false
	}
	if !bytes.Equal(bytesOf(c.msgs), c.snap) {
		return false
	}
	for i := range c.calls {
		if !bytes.Equal(bytesOf(c.calls[i].live), c.calls[i].snap) {
			return false
		}
	}
	return true
}

// renew makes c a copy of h and msgs again, unless it provably still is
// one: c is a copy of msgs[:len(c.msgs)] (see reqView.request), grown to
// all of them, and was not written since. The provider's copy is renewed
// before every handoff, since the provider may write what it is handed.
func (c *handedCopy) renew(h *session.Header, msgs []session.Message) {
	if len(c.msgs) != len(msgs) || !c.unwritten(c.msgs) {
		*c = handedCopy{header: c.header}
		c.add(msgs)
	}
	if !sameHeader(&c.header, h) {
		c.header = session.CloneHeader(*h)
	}
}

// bytesOf is the memory of s's elements. Messages and tool calls are
// strings and slices only: no padding, so equal values copied by
// assignment have equal bytes.
func bytesOf[T session.Message | session.ToolCall](s []T) []byte {
	if len(s) == 0 {
		return nil
	}
	var zero T
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(s))), len(s)*int(unsafe.Sizeof(zero)))
}

// growCap makes room for n more elements, with as much again to spare
// when it must grow (slices.Grow alone grows large slices by a quarter).
func growCap[T any](s []T, n int) []T {
	if cap(s)-len(s) >= n {
		return s
	}
	return slices.Grow(s, len(s)+2*n)
}
