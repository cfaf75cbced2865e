package eval

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/vigil-run/vigil/session"
)

// Unfinished finds the newest eval session of the store that ran the
// suite of this digest and did not end (no eval/end): a run that was
// killed, interrupted or stopped by its budget. "" when there is none.
func Unfinished(ctx context.Context, store session.Store, digest string) (string, error) {
	infos, err := store.List(ctx)
	var le *session.ListError
	if err != nil && !errors.As(err, &le) {
		return "", fmt.Errorf("eval: %w", err)
	}
	// Newest first: ids sort by creation time, and so does Created.
	slices.SortStableFunc(infos, func(a, b session.Info) int { return b.Created.Compare(a.Created) })
	for _, info := range infos {
		if info.By != By || info.Parent != nil {
			continue
		}
		log, err := store.Load(ctx, info.ID)
		if err != nil {
			continue
		}
		recs := log.Records
		if len(recs) == 0 || recs[0].Type() != TypeRun {
			continue // a candidate's run
		}
		run, err := session.DecodeData[RunInfo](recs[0])
		if err != nil || run.Digest != digest {
			continue
		}
		if slices.ContainsFunc(recs, func(r session.Record) bool { return r.Type() == TypeEnd }) {
			return "", nil // the last run of this suite finished
		}
		return info.ID, nil
	}
	return "", nil
}
