package session

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Deleter is implemented by stores that can remove a session for good:
// its log, its queue's jobs (queued, running or finished), its lease, and
// anything else the store keeps keyed by the session. Afterwards the
// session is ErrNotFound to every method, Delete included; its id may be
// created again. A fork of the deleted session keeps working: every store
// gives a fork its own copy of the records it inherits. A job of the
// session running in this store has its claim cancelled
// ([Claim.Cancelled]) and its end refused ([ErrJobDone]); the session's
// next append by a writer of this store is ErrNotFound. Delete does not
// wait for that writer: the runtime (its DeleteSession) cancels the
// session's queue and lets its turn end first.
type Deleter interface {
	Delete(ctx context.Context, id string) error
}

// Retention is a store's rule for how long a session is kept.
type Retention struct {
	// MaxAge, when positive, is how long a session is kept after its last
	// record (or, without records, its creation): an older session is
	// deleted by the next prune. Zero keeps every session.
	MaxAge time.Duration `yaml:"max_age" json:"max_age,omitempty" doc:"When positive, is how long a session is kept after its last record (or, without records, its creation): an older session is deleted by the next prune. Zero keeps every session."`
}

// Validate checks r.
func (r Retention) Validate() error {
	if r.MaxAge < 0 {
		return errors.New("retention.max_age must not be negative")
	}
	return nil
}

// LastActive returns when session id of st last changed: the time of its
// last record, or its creation when it has none. It reads the log's tail
// only ([LoadTail]).
func LastActive(ctx context.Context, st Store, id string) (time.Time, error) {
	t, err := LoadTail(ctx, st, id)
	if err != nil {
		return time.Time{}, err
	}
	if n := len(t.Records); n > 0 {
		return t.Records[n-1].Time(), nil
	}
	if t.Next > 0 {
		// No turn in the log (a tail holds its last turn's records only):
		// the whole log is small, or was written without turns.
		log, err := st.Load(ctx, id)
		if err != nil {
			return time.Time{}, err
		}
		if n := len(log.Records); n > 0 {
			return log.Records[n-1].Time(), nil
		}
	}
	return t.Info.Created, nil
}

// Expired reports whether a session last active at last is past the
// retention at now: strictly older than MaxAge. A session exactly MaxAge
// old is kept until the next prune.
func (r Retention) Expired(last, now time.Time) bool {
	return r.MaxAge > 0 && now.Sub(last) > r.MaxAge
}

// PruneCandidates returns the ids of the sessions of st past retention r
// at now, in id order. A session with unfinished jobs (when st keeps a
// [Queue]) is active whatever its log says, and is kept. A session that
// cannot be read is skipped, and named in the error returned with the
// others.
func PruneCandidates(ctx context.Context, st Store, r Retention, now time.Time) ([]string, error) {
	if r.MaxAge <= 0 {
		return nil, nil
	}
	infos, err := st.List(ctx)
	var le *ListError
	if err != nil && !errors.As(err, &le) {
		return nil, fmt.Errorf("session: prune: %w", err)
	}
	q, _ := st.(Queue)
	var out []string
	var errs []error
	if le != nil {
		errs = append(errs, le)
	}
	for _, info := range infos {
		// The header's creation time bounds the last record's from
		// below: a session created within MaxAge is kept unread.
		if !r.Expired(info.Created, now) {
			continue
		}
		last, err := LastActive(ctx, st, info.ID)
		if errors.Is(err, ErrNotFound) {
			continue // deleted meanwhile
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("session %s: %w", info.ID, err))
			continue
		}
		if !r.Expired(last, now) {
			continue
		}
		if q != nil {
			jobs, err := q.Jobs(ctx, info.ID)
			if err != nil && !errors.Is(err, ErrNotFound) {
				errs = append(errs, fmt.Errorf("session %s: %w", info.ID, err))
				continue
			}
			if len(jobs) > 0 {
				continue
			}
		}
		out = append(out, info.ID)
	}
	return out, errors.Join(errs...)
}
