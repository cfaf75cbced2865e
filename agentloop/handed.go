package agentloop

import "github.com/vigil-run/vigil/session"

// handedHeaders are the two copies of a session's request header the loop
// hands out, kept between steps: the listeners' (every llm/stream listener
// is handed it) and the provider's. A header holds slices (tools, stop
// words, the output schema) that whoever holds it could write, so each
// side gets its own and the seal keeps a third: what one side writes
// reaches neither the other nor the seal. The seal compares the
// listeners' copy with its own before the provider gets the request
// (sealedFallback), and the provider's copy is compared, and copied again
// when written, before every handoff (renew). Both cost the header's
// size, not the conversation's.
//
// The messages need no copies: a request carries a read-only view of the
// loop's fold ([session.Messages]), which nobody it is handed to can
// write.
type handedHeaders struct {
	lis, prov session.Header
}

// renew makes h's provider copy equal to built again, if it is not.
func (h *handedHeaders) renew(built *session.Header) *session.Header {
	if !sameHeader(&h.prov, built) {
		h.prov = session.CloneHeader(*built)
	}
	return &h.prov
}
