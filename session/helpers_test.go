package session_test

import "time"

var epoch = time.Date(2026, 11, 29, 20, 21, 24, 0, time.UTC)
