package jsonl_test

import (
	"testing"

	"github.com/vigil-run/vigil/session"
	"github.com/vigil-run/vigil/session/jsonl"
	"github.com/vigil-run/vigil/session/sessiontest"
)

func TestDeleteConformance(t *testing.T) {
	sessiontest.RunDelete(t, sessiontest.QueueHarness{
		New: func(t *testing.T) func(t *testing.T) session.Store {
			dir := t.TempDir()
			return func(t *testing.T) session.Store { return open(t, dir) }
		},
		Crash: func(t *testing.T, s session.Store) { jsonl.Crash(s.(*jsonl.Store)) },
	})
}
