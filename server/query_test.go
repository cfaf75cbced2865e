package server

import (
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A boolean query parameter is true or false as the document says, or
// absent; any other spelling is a 400, never the default.
func TestQueryBoolTakesOnlyTrueOrFalse(t *testing.T) {
	for _, tc := range []struct {
		query string
		def   bool
		want  bool
		ok    bool
	}{
		{"", true, true, true},
		{"", false, false, true},
		{"queue=true", false, true, true},
		{"queue=false", true, false, true},
		{"queue=", true, true, true},
		{"queue=1", true, false, false},
		{"queue=FALSE", true, false, false},
		{"queue=maybe", false, false, false},
	} {
		got, err := queryBool(httptest.NewRequest("POST", "/x?"+tc.query, nil), "queue", tc.def)
		if !tc.ok {
			var e *Error
			require.ErrorAs(t, err, &e, tc.query)
			assert.Equal(t, CodeBadRequest, e.Code, tc.query)
			continue
		}
		require.NoError(t, err, tc.query)
		assert.Equal(t, tc.want, got, tc.query)
	}
}
