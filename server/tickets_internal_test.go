package server

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestATicketExpiresAndTheOutstandingAreBounded(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	tk := newTickets()
	tk.now = func() time.Time { return now }
	alice := Principal{Name: "alice", Tenant: "acme", Roles: []Role{RoleViewer}}

	a := tk.issue("s1", alice)
	assert.Equal(t, now.Add(TicketTTL), a.Expires)
	b := tk.issue("s1", alice)
	assert.NotEqual(t, a.Ticket, b.Ticket)
	now = now.Add(TicketTTL - time.Second)
	p, ok := tk.redeem("s1", a.Ticket)
	require.True(t, ok, "within its 60 s")
	assert.Equal(t, alice, p)
	now = now.Add(time.Second)
	_, ok = tk.redeem("s1", b.Ticket)
	assert.False(t, ok, "expired at 60 s")

	// Expired tickets go at the next issue; past the bound, the oldest.
	tk.issue("s1", alice)
	assert.Len(t, tk.byKey, 1)
	first := tk.issue("s1", alice)
	for range maxTickets + 10 {
		tk.issue("s2", alice)
	}
	assert.LessOrEqual(t, len(tk.byKey), maxTickets)
	assert.LessOrEqual(t, len(tk.order), maxTickets)
	_, ok = tk.redeem("s1", first.Ticket)
	assert.False(t, ok, "the oldest went first")
}
