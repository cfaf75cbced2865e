package main

import (
	"bytes"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-run/vigil/session"
)

// sessions show names who created a session, its tenant, and who posted
// each turn.
func TestShowNamesOwnerAndPoster(t *testing.T) {
	now := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	start, err := session.NewRecord(0, now, session.Event{Type: session.TypeTurnStart, Turn: 1, Data: session.TurnStart{By: "bob"}})
	require.NoError(t, err)
	var out bytes.Buffer
	require.NoError(t, showSession(&out, session.Info{ID: "s1", Created: now, Tenant: "acme", By: "alice"}, []session.Record{start}, nil))
	assert.Contains(t, out.String(), "session s1  created 2026-12-01 10:00:00Z by alice  tenant acme")
	assert.Contains(t, out.String(), "turn 1, posted by bob")
}
