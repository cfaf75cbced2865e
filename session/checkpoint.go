package session

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"
)

// TypeCheckpoint is the plugin-owned, ignorable record type of a signed
// checkpoint: a C2SP signed note over the log's tree (see [Checkpoint]).
// A reader without integrity checking skips it as any ignorable record.
const TypeCheckpoint = "integrity/checkpoint"

// CheckpointData is the data of an integrity/checkpoint record.
type CheckpointData struct {
	// Note is the signed note, as note.Sign made it: the checkpoint's
	// text, a blank line and one signature line per key.
	Note string `json:"note"`
}

// Checkpoint is what a signed checkpoint states of a log (the body of
// its note, C2SP tlog-checkpoint with one extension line):
//
//	vigil/session/<id>
//	<size>
//	<root, base64>
//	header <SHA-256 of the header line, base64>
//
// Size counts the records it covers (seqs 0 to Size-1: those before the
// checkpoint record itself), Root is their tree's hash ([MerkleTree]), Header
// binds the header line ([HeaderHash]).
type Checkpoint struct {
	Origin string
	Size   int64
	Root   tlog.Hash
	Header tlog.Hash
}

// CheckpointOrigin is the origin line of session id's checkpoints.
func CheckpointOrigin(id string) string { return "vigil/session/" + id }

// ErrCheckpointText is the error of a checkpoint note whose text is not
// a checkpoint.
var ErrCheckpointText = errors.New("session: malformed checkpoint")

// Text returns the checkpoint's note text, newline-terminated.
func (c Checkpoint) Text() []byte {
	b := make([]byte, 0, 160)
	b = append(b, c.Origin...)
	b = append(b, '\n')
	b = strconv.AppendInt(b, c.Size, 10)
	b = append(b, '\n')
	b = base64.StdEncoding.AppendEncode(b, c.Root[:])
	b = append(b, "\nheader "...)
	b = base64.StdEncoding.AppendEncode(b, c.Header[:])
	return append(b, '\n')
}

// ParseCheckpoint reads a checkpoint's note text (see [Checkpoint.Text]).
func ParseCheckpoint(text string) (Checkpoint, error) {
	lines := strings.Split(text, "\n")
	if len(lines) != 5 || lines[4] != "" || lines[0] == "" || !strings.HasPrefix(lines[3], "header ") {
		return Checkpoint{}, fmt.Errorf("%w: want origin, size, root and header lines", ErrCheckpointText)
	}
	size, err := strconv.ParseInt(lines[1], 10, 64)
	if err != nil || size < 0 || strconv.FormatInt(size, 10) != lines[1] {
		return Checkpoint{}, fmt.Errorf("%w: size %q", ErrCheckpointText, lines[1])
	}
	c := Checkpoint{Origin: lines[0], Size: size}
	if err := decodeHash(&c.Root, lines[2]); err != nil {
		return Checkpoint{}, fmt.Errorf("%w: root: %w", ErrCheckpointText, err)
	}
	if err := decodeHash(&c.Header, strings.TrimPrefix(lines[3], "header ")); err != nil {
		return Checkpoint{}, fmt.Errorf("%w: header: %w", ErrCheckpointText, err)
	}
	return c, nil
}

func decodeHash(h *tlog.Hash, s string) error {
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		return err
	}
	if len(b) != tlog.HashSize {
		return fmt.Errorf("%d bytes, want %d", len(b), tlog.HashSize)
	}
	copy(h[:], b)
	return nil
}

// SignCheckpoint returns c's signed note.
func SignCheckpoint(c Checkpoint, signer note.Signer) ([]byte, error) {
	return note.Sign(&note.Note{Text: string(c.Text())}, signer)
}

// CheckpointEvent is the ignorable integrity/checkpoint event holding
// the signed note msg. Its data is the value, not its JSON: the record
// encodes it once, where JSON bytes would be encoded here and scanned
// again to be compacted (a signing session pays it at every checkpoint).
func CheckpointEvent(msg []byte) Event {
	return Event{Type: TypeCheckpoint, Ignorable: true, Data: CheckpointData{Note: string(msg)}}
}

// CheckpointNote returns the signed note an integrity/checkpoint record
// holds, and false for any other record or one whose data has no note.
func CheckpointNote(r Record) ([]byte, bool) {
	if r.typ != TypeCheckpoint {
		return nil, false
	}
	var d CheckpointData
	if err := json.Unmarshal(r.Data(), &d); err != nil || d.Note == "" {
		return nil, false
	}
	return []byte(d.Note), true
}
