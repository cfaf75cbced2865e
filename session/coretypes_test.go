package session_test

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/vigil-run/vigil/session"
)

// CoreTypes names the core types, sorted: each one a plugin may not
// register, and a record of it decodes as core.
func TestCoreTypesAreTheCoreTypes(t *testing.T) {
	types := session.CoreTypes()
	assert.True(t, slices.IsSorted(types))
	for _, want := range []string{session.TypeTurnStart, session.TypeToolResult, session.TypeApprovalPolicy, session.TypeEndSeed, session.TypeToolRetry, session.TypeToolReconcile} {
		assert.Contains(t, types, want)
	}
	for _, typ := range types {
		assert.Panics(t, func() { session.RegisterType(typ) }, typ)
	}
	types[0] = "changed"
	assert.NotEqual(t, "changed", session.CoreTypes()[0], "a copy")
}
