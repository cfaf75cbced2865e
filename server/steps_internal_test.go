package server

import (
	"errors"
	"net/http"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseStep(t *testing.T) {
	for _, c := range []struct {
		turn, step string
		t, s       int
		ok         bool
	}{
		{"1", "1", 1, 1, true},
		{"12", "003", 12, 3, true},
		{"0", "1", 0, 0, false},
		{"1", "0", 0, 0, false},
		{"-1", "1", 0, 0, false},
		{"+1", "1", 0, 0, false},
		{"1", "", 0, 0, false},
		{"1e3", "1", 0, 0, false},
		{"2147483648", "1", 0, 0, false},
		{"2147483647", "1", 2147483647, 1, true},
		{" 1", "1", 0, 0, false},
	} {
		tn, sn, err := parseStep(c.turn, c.step)
		if !c.ok {
			var e *Error
			require.True(t, errors.As(err, &e), "%q %q", c.turn, c.step)
			assert.Equal(t, http.StatusBadRequest, e.status)
			continue
		}
		require.NoError(t, err, "%q %q", c.turn, c.step)
		assert.Equal(t, [2]int{c.t, c.s}, [2]int{tn, sn})
	}
}

// Whatever the path holds, parseStep answers numbers from 1 that the
// path spelled, or a 400; it never panics.
func FuzzParseStep(f *testing.F) {
	for _, s := range []string{"1", "0", "-1", "99999999999999999999", "0x1", "١", ""} {
		f.Add(s, "1")
	}
	f.Fuzz(func(t *testing.T, turn, step string) {
		tn, sn, err := parseStep(turn, step)
		if err != nil {
			var e *Error
			require.True(t, errors.As(err, &e))
			require.Equal(t, http.StatusBadRequest, e.status)
			require.Equal(t, CodeBadRequest, e.Code)
			return
		}
		require.GreaterOrEqual(t, tn, 1)
		require.GreaterOrEqual(t, sn, 1)
		a, err1 := strconv.Atoi(turn)
		b, err2 := strconv.Atoi(step)
		require.NoError(t, err1)
		require.NoError(t, err2)
		require.Equal(t, [2]int{a, b}, [2]int{tn, sn})
	})
}
