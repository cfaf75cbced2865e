package session_test

import (
	"errors"
	"testing"

	"github.com/vigil-run/vigil/session"
)

// FuzzDecode: the decoder never panics; whatever it accepts is a valid
// log that re-encodes to bytes it decodes to again, unchanged, and that
// folds without error. The seed corpus is in testdata/fuzz/FuzzDecode.
func FuzzDecode(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte) {
		log, err := session.DecodeBytes(data)
		if err != nil {
			if log != nil && !errors.Is(err, session.ErrTornTail) {
				t.Fatalf("a log with a non-torn error: %v", err)
			}
			if log == nil {
				return
			}
			if log.Torn == 0 || int(log.Size)+log.Torn != len(data) {
				t.Fatalf("torn tail of %d bytes at %d in %d", log.Torn, log.Size, len(data))
			}
		} else if int(log.Size) != len(data) {
			t.Fatalf("size %d of %d bytes", log.Size, len(data))
		}
		if err := session.Validate(log.Records); err != nil {
			t.Fatalf("decoded an invalid log: %v", err)
		}
		if _, err := session.DeriveMessages(log.Records); err != nil {
			t.Fatalf("decoded a log that does not fold: %v", err)
		}
		enc := session.AppendHeaderLine(nil, log.Info)
		for _, r := range log.Records {
			enc = r.AppendLine(enc)
		}
		again, err := session.DecodeBytes(enc)
		if err != nil {
			t.Fatalf("re-encoded log does not decode: %v\n%s", err, enc)
		}
		enc2 := session.AppendHeaderLine(nil, again.Info)
		for _, r := range again.Records {
			enc2 = r.AppendLine(enc2)
		}
		if string(enc) != string(enc2) {
			t.Fatalf("re-encoding is not stable:\n%s\n%s", enc, enc2)
		}
	})
}
