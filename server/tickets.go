package server

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"net/http"
	"sync"
	"time"
)

// A browser's EventSource cannot send an Authorization header, so a page
// authenticates its stream with a ticket instead: it POSTs (with its
// bearer token) for one, then opens
// GET /v1/sessions/{id}/events?ticket=…. A ticket is good for one
// stream of the one session it was issued for, within [TicketTTL]; it is
// redeemed by the server process that issued it, and it is no bearer
// token: no other route takes it. The stream runs as the principal that
// asked for the ticket.

// TicketTTL is how long a stream ticket may wait for its stream.
const TicketTTL = 60 * time.Second

// maxTickets bounds the tickets outstanding; past it the oldest go first.
const maxTickets = 10_000

// Ticket is the answer to POST /v1/sessions/{id}/events/tickets.
type Ticket struct {
	Ticket  string    `json:"ticket"`
	Expires time.Time `json:"expires"`
}

type ticket struct {
	session string
	p       Principal
	expires time.Time
}

// tickets are the stream tickets outstanding, by the SHA-256 of their
// text (a lookup by hash reveals nothing of a ticket through its timing).
type tickets struct {
	mu    sync.Mutex
	now   func() time.Time
	byKey map[[sha256.Size]byte]ticket
	order [][sha256.Size]byte // in the order issued, so of expiry
}

func newTickets() *tickets {
	return &tickets{now: time.Now, byKey: map[[sha256.Size]byte]ticket{}}
}

// issue returns a new ticket for session id's stream, run as p.
func (t *tickets) issue(id string, p Principal) Ticket {
	raw := make([]byte, 32)
	_, _ = rand.Read(raw) // never fails (crypto/rand)
	text := base64.RawURLEncoding.EncodeToString(raw)
	key := sha256.Sum256([]byte(text))
	t.mu.Lock()
	defer t.mu.Unlock()
	now := t.now()
	t.sweep(now)
	exp := now.Add(TicketTTL)
	t.byKey[key] = ticket{session: id, p: p, expires: exp}
	t.order = append(t.order, key)
	return Ticket{Ticket: text, Expires: exp.UTC().Truncate(time.Second)}
}

// redeem takes the ticket text for session id's stream: the principal it
// was issued to, or false when it is unknown, used, expired or for
// another session. A ticket is taken once, whatever the outcome.
func (t *tickets) redeem(id, text string) (Principal, bool) {
	key := sha256.Sum256([]byte(text))
	t.mu.Lock()
	defer t.mu.Unlock()
	tk, ok := t.byKey[key]
	delete(t.byKey, key)
	if !ok || tk.session != id || !t.now().Before(tk.expires) {
		return Principal{}, false
	}
	return tk.p, true
}

// sweep drops the expired tickets, and the oldest past maxTickets.
func (t *tickets) sweep(now time.Time) {
	n := 0
	for ; n < len(t.order); n++ {
		key := t.order[n]
		tk, ok := t.byKey[key]
		if ok && now.Before(tk.expires) && len(t.order)-n < maxTickets {
			break
		}
		delete(t.byKey, key)
	}
	t.order = t.order[n:]
}

// handleTicket issues a ticket for the event stream of the session the
// gate admitted (so one the caller may see).
func (s *Server) handleTicket(_ http.ResponseWriter, r *http.Request) (int, any, error) {
	return http.StatusCreated, s.tickets.issue(admitted(r).ID, PrincipalOf(r.Context())), nil
}
