package session_test

import (
	"errors"
	"fmt"
	"io/fs"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-run/vigil/session"
)

// A store's error says the store, the operation, the id and the cause
// once each, and keeps the cause's chain for errors.Is and errors.As.
func TestStoreErrorSaysItOnce(t *testing.T) {
	tests := []struct {
		name      string
		op, id    string
		err       error
		want      string
		sentinels []error
	}{
		{"a bare not found", "load", "01ABC", session.ErrNotFound, "session 01ABC not found", []error{session.ErrNotFound}},
		{"the id's NotFound", "delete", "01ABC", session.NotFound("01ABC"), "session 01ABC not found", []error{session.ErrNotFound}},
		{"another id's NotFound keeps the operation", "fork", "01ABC", session.NotFound("01XYZ"), "jsonl: fork 01ABC: session 01XYZ not found", []error{session.ErrNotFound}},
		{"a wrapped sentinel", "lease", "01ABC", fmt.Errorf("%w (held by pid 7)", session.ErrLocked), "jsonl: lease 01ABC: locked by another writer (held by pid 7)", []error{session.ErrLocked}},
		{"a corrupt line", "load", "01ABC", &session.CorruptError{Line: 3, Err: session.ErrSeqGap}, "jsonl: load 01ABC: line 3: seq gap", []error{session.ErrCorrupt, session.ErrSeqGap}},
		{"the whole store", "ping", "", session.ErrClosed, "jsonl: ping: closed", []error{session.ErrClosed}},
		{"an invalid id", "load", "x.jsonl", session.InvalidID("x.jsonl"), `"x.jsonl" is not a session id`, []error{session.ErrInvalidID}},
		{"an error of the system", "load", "01ABC", fs.ErrPermission, "jsonl: load 01ABC: permission denied", []error{fs.ErrPermission}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := session.StoreError("jsonl", tt.op, tt.id, tt.err)
			require.Error(t, err)
			assert.Equal(t, tt.want, err.Error())
			for _, s := range tt.sentinels {
				assert.ErrorIs(t, err, s)
			}
		})
	}
	var ce *session.CorruptError
	assert.True(t, errors.As(session.StoreError("jsonl", "load", "x", &session.CorruptError{Line: 2, Err: session.ErrMalformed}), &ce))
	assert.NoError(t, session.StoreError("jsonl", "load", "x", nil))
}
