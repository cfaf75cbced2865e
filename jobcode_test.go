package vigil_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/vigil-run/vigil"
	"github.com/vigil-run/vigil/agentloop"
	"github.com/vigil-run/vigil/session"
)

// A failed job's error code says what kind of failure it was, wrapped
// or not.
func TestJobErrorCodes(t *testing.T) {
	for _, c := range []struct {
		err  error
		want string
	}{
		{&session.DecidedError{ID: "c1"}, vigil.JobCodeDecided},
		{fmt.Errorf("enqueue: %w", session.ErrDuplicateJob), vigil.JobCodeDecided},
		{fmt.Errorf("decide: %w", session.ErrNotSuspended), vigil.JobCodeNotPending},
		{session.ErrNotPending, vigil.JobCodeNotPending},
		{fmt.Errorf("x: %w", session.ErrInvalidDecision), vigil.JobCodeInvalidDecision},
		{session.ErrUnknownCall, vigil.JobCodeNotFound},
		{vigil.ErrNotFound, vigil.JobCodeNotFound},
		{context.Canceled, vigil.JobCodeCancelled},
		{fmt.Errorf("turn: %w", vigil.ErrAbandoned), vigil.JobCodeCancelled},
		{&agentloop.BudgetError{}, vigil.JobCodeBudget},
		{errors.New("the model went away"), vigil.JobCodeError},
	} {
		assert.Equal(t, c.want, vigil.JobErrorCode(c.err), "%v", c.err)
	}
}
