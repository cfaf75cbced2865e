package yamljson_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-run/vigil/plugins/internal/yamljson"
)

func TestMarshalTurnsAnyKeysIntoStrings(t *testing.T) {
	b, err := yamljson.Marshal(map[any]any{"k": []any{map[any]any{1: "v", true: 2}}, "n": nil})
	require.NoError(t, err)
	assert.JSONEq(t, `{"k":[{"1":"v","true":2}],"n":null}`, string(b))
}
