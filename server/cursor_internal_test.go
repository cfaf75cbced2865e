package server

import (
	"math"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
)

// FuzzParseCursor: a cursor parses to a seq whose successor exists, or
// to a bad_cursor error; never a panic, never a wrap-around.
func FuzzParseCursor(f *testing.F) {
	for _, s := range []string{"", "-1", "0", "42", "9223372036854775806", "9223372036854775807", "-2", "+5", "0x10", "1e3", "٣"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		after, err := parseCursor("after", raw)
		if err != nil {
			require.Equal(t, CodeBadCursor, classify(err).Code)
			require.Equal(t, 400, classify(err).status)
			return
		}
		require.GreaterOrEqual(t, after, int64(-1))
		require.Less(t, after, int64(math.MaxInt64))
		require.Greater(t, after+1, after)
		if raw != "" {
			back, perr := strconv.ParseInt(raw, 10, 64)
			require.NoError(t, perr)
			require.Equal(t, back, after)
		}
	})
}
