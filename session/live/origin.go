package live

import (
	"context"
	"fmt"
)

// Origin returns the id of the session whose log first held the record at
// seq: this session's, or, for a record a fork inherited, the session it
// was forked from (followed through forks of forks). A fork keeps the
// seqs of what it inherits, so seq names the same record all the way up.
// A call a fork inherited ran in its origin, under the origin's
// idempotency key: running it again must use that key.
func (s *Session) Origin(ctx context.Context, seq int64) (string, error) {
	info := s.Info()
	for p := info.Parent; p != nil && p.Call == "" && seq <= p.Seq; p = info.Parent {
		parent, err := s.m.infoOf(ctx, p.ID)
		if err != nil {
			return "", fmt.Errorf("session %s: the origin of seq %d: %w", s.ID(), seq, err)
		}
		info = parent
	}
	return info.ID, nil
}
