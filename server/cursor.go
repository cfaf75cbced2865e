package server

import (
	"math"
	"net/http"
	"strconv"
)

// CodeBadCursor is the code of an `after` or `Last-Event-ID` that names
// no seq an event stream can resume after.
const CodeBadCursor = "bad_cursor"

// parseCursor reads the seq a stream resumes after: -1 (or nothing) for
// the whole log, else a seq. A value below -1, past the largest seq whose
// successor exists (math.MaxInt64 - 1), or not an integer is a 400
// bad_cursor: it must never wrap around into a replay from seq 0.
func parseCursor(name, raw string) (int64, error) {
	if raw == "" {
		return -1, nil
	}
	after, err := strconv.ParseInt(raw, 10, 64)
	if err != nil || after < -1 || after == math.MaxInt64 {
		return 0, apiError(http.StatusBadRequest, CodeBadCursor, "%s: %q is not a seq to resume after (an integer from -1 to %d)", name, raw, int64(math.MaxInt64-1))
	}
	return after, nil
}
