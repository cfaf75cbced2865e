// Package session is the event-sourced conversation: an append-only,
// immutable log of events per session, and the pure fold that derives the
// messages a model is shown.
package session
