package session_test

import (
	"errors"
	"reflect"
	"slices"
	"testing"

	"github.com/vigil-run/vigil/session"
)

// FuzzDecode: the decoder never panics; whatever it accepts is a valid
// log that folds without error and re-encodes to exactly the bytes it was
// decoded from (the decoder accepts only the encoder's canonical form),
// which decode to the same records again. The seed corpus is in
// testdata/fuzz/FuzzDecode.
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
		checkReencodes(t, data, log)
	})
}

// checkReencodes checks that log, decoded from data, re-encodes to the
// bytes it was decoded from, which decode to the same records again.
func checkReencodes(t *testing.T, data []byte, log *session.Log) {
	t.Helper()
	enc := session.AppendHeaderLine(nil, log.Info)
	for _, r := range log.Records {
		enc = r.AppendLine(enc)
	}
	if string(enc) != string(data[:log.Size]) {
		t.Fatalf("decoded bytes that do not re-encode to themselves:\n%q\n%q", data[:log.Size], enc)
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
	if !reflect.DeepEqual(log.Info, again.Info) || len(again.Records) != len(log.Records) {
		t.Fatalf("re-decoded another log: %+v, %d records; was %+v, %d", again.Info, len(again.Records), log.Info, len(log.Records))
	}
	for i, r := range log.Records {
		a := again.Records[i]
		if r.Seq() != a.Seq() || r.Type() != a.Type() || !r.Time().Equal(a.Time()) || r.Turn() != a.Turn() ||
			r.Step() != a.Step() || r.Surface() != a.Surface() || !slices.Equal(r.Sources(), a.Sources()) ||
			r.Ignorable() != a.Ignorable() || string(r.Data()) != string(a.Data()) {
			t.Fatalf("record %d re-decoded differently:\n%s\n%s", i, r, a)
		}
	}
}
